#ifndef GCPSTREAM_UTIL_JSON_H_
#define GCPSTREAM_UTIL_JSON_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "absl/status/statusor.h"

namespace gcpstream::util {

// Parses JSON text that came from outside (a record, a service's JSON value) without trusting
// its shape. INVALID_ARGUMENT when it is not valid JSON (with the parser's explanation) or nests
// arrays and objects deeper than `max_depth` (naming the byte where the limit was crossed): code
// that walks a value recursively — nlohmann's dump() and copies among it — would overflow the
// stack on hostile nesting. The depth is checked before any parsing. Never throws.
absl::StatusOr<nlohmann::json> ParseJsonBounded(std::string_view text, std::size_t max_depth);

}  // namespace gcpstream::util

#endif  // GCPSTREAM_UTIL_JSON_H_
