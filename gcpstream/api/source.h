#ifndef GCPSTREAM_API_SOURCE_H_
#define GCPSTREAM_API_SOURCE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "gcpstream/api/source_reader.h"
#include "gcpstream/api/split_enumerator.h"
#include "gcpstream/api/versioned_serializer.h"

namespace gcpstream {

enum class Boundedness { kBounded, kContinuousUnbounded };

// A FLIP-27 source: a factory for one enumerator (on the coordinator) and one reader per
// subtask, plus the serializers for what they checkpoint.
//
// SplitT must be copyable and provide `std::string split_id() const`, unique within the source.
// A Source object is shared by the coordinator and every subtask: its methods are called
// concurrently and must be thread-safe (typically: it is immutable configuration).
template <typename T, typename SplitT, typename EnumStateT>
class Source {
 public:
  using value_type = T;
  using split_type = SplitT;
  using enumerator_state_type = EnumStateT;

  virtual ~Source() = default;
  virtual Boundedness boundedness() const = 0;
  virtual absl::StatusOr<std::unique_ptr<SplitEnumerator<SplitT, EnumStateT>>> create_enumerator(
      SplitEnumeratorContext<SplitT>& context) const = 0;
  virtual absl::StatusOr<std::unique_ptr<SplitEnumerator<SplitT, EnumStateT>>> restore_enumerator(
      SplitEnumeratorContext<SplitT>& context, EnumStateT state) const = 0;
  virtual absl::StatusOr<std::unique_ptr<SourceReader<T, SplitT>>> create_reader(
      SourceReaderContext& context) const = 0;
  virtual const VersionedSerializer<SplitT>& split_serializer() const = 0;
  virtual const VersionedSerializer<EnumStateT>& enumerator_state_serializer() const = 0;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_SOURCE_H_
