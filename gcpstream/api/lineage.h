#ifndef GCPSTREAM_API_LINEAGE_H_
#define GCPSTREAM_API_LINEAGE_H_

#include <map>
#include <string>
#include <vector>

namespace gcpstream {

// A dataset a source reads or a sink writes, named the way lineage consumers (OpenLineage)
// expect: a namespace (e.g. bigtable://my-project/my-instance) and a name within it (the
// table), plus facets of the physical resource.
struct LineageDataset {
  std::string name_space;
  std::string name;
  std::map<std::string, std::string> facets;  // the "gcp" physical-resource facet, flattened
};

struct LineageVertex {
  enum class Role { kSource, kSink };
  Role role = Role::kSource;
  std::string connector;  // "pubsub", "bigtable", ...
  bool bounded = false;
  // Empty when the datasets are only known per record (a dynamic destination resolver).
  std::vector<LineageDataset> datasets;
};

// Implemented by sources and sinks that can say what they read or write. It must not load
// credentials, open clients, issue RPCs or call user code: it reads configuration only.
class LineageVertexProvider {
 public:
  virtual ~LineageVertexProvider() = default;
  virtual LineageVertex lineage_vertex() const = 0;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_LINEAGE_H_
