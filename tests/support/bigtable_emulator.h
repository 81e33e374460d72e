#ifndef GCPSTREAM_TESTS_SUPPORT_BIGTABLE_EMULATOR_H_
#define GCPSTREAM_TESTS_SUPPORT_BIGTABLE_EMULATOR_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"

namespace gcpstream::testing {

// One cell as ReadRows returns it.
struct BigtableCell {
  std::string family;
  std::string qualifier;
  std::int64_t timestamp_micros = 0;
  std::string value;
};

// Direct access to the Bigtable emulator (or anything speaking its API, e.g. the fault proxy in
// front of it) for test setup and verification, not through the connector under test.
class BigtableEmulatorClient {
 public:
  explicit BigtableEmulatorClient(const std::string& endpoint);

  // Creates `table_name` ("projects/p/instances/i/tables/t") with the given families.
  absl::Status create_table(
      const std::string& table_name,
      const std::map<std::string, google::bigtable::admin::v2::ColumnFamily>& families);
  absl::StatusOr<google::bigtable::admin::v2::Table> get_table(const std::string& table_name);
  // Every row (all versions), merged from the ReadRows chunk stream; cells in stream order.
  absl::StatusOr<std::map<std::string, std::vector<BigtableCell>>> read_rows(
      const std::string& table_name);
  // One raw MutateRows call: the status per entry index, then the call's status.
  struct MutateResult {
    std::map<std::int64_t, google::rpc::Status> entries;
    grpc::Status rpc;
  };
  MutateResult mutate_rows(const google::bigtable::v2::MutateRowsRequest& request);
  grpc::Status mutate_row(const google::bigtable::v2::MutateRowRequest& request);

 private:
  std::unique_ptr<google::bigtable::v2::Bigtable::Stub> data_;
  std::unique_ptr<google::bigtable::admin::v2::BigtableTableAdmin::Stub> admin_;
};

// "projects/<p>/instances/<i>/tables/<t>"
inline std::string BigtableTableName(const std::string& project, const std::string& instance,
                                     const std::string& table) {
  return "projects/" + project + "/instances/" + instance + "/tables/" + table;
}

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_BIGTABLE_EMULATOR_H_
