#ifndef GCPSTREAM_API_VERSIONED_SERIALIZER_H_
#define GCPSTREAM_API_VERSIONED_SERIALIZER_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gcpstream {

// Turns a value (a split, enumerator state, writer state, a committable) into bytes stored in
// a checkpoint, and back. The version is stored beside the bytes; deserialize() receives the
// version the bytes were written with and must either read it or return an error naming it
// (FAILED_PRECONDITION is conventional for "unknown version"). Implementations must be
// stateless and thread-safe: the runtime calls them from several threads.
template <typename T>
class VersionedSerializer {
 public:
  virtual ~VersionedSerializer() = default;
  virtual int version() const = 0;
  virtual absl::StatusOr<std::string> serialize(const T& value) const = 0;
  virtual absl::StatusOr<T> deserialize(int version, std::string_view bytes) const = 0;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_VERSIONED_SERIALIZER_H_
