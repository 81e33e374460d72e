#include "gcpstream/util/bytes.h"

#include <fmt/format.h>

namespace gcpstream::util {

absl::Status UnknownVersion(std::string_view what, int version, int supported) {
  return absl::FailedPreconditionError(fmt::format(
      "{} was written with serializer version {}, this build reads version {} only", what,
      version, supported));
}

}  // namespace gcpstream::util
