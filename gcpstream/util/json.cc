#include "gcpstream/util/json.h"

#include <fmt/format.h>

#include <optional>

namespace gcpstream::util {
namespace {

// The byte offset where nesting first exceeds `max_depth`, if it does. Tracks strings and
// escapes so that brackets inside strings do not count.
std::optional<std::size_t> TooDeepAt(std::string_view text, std::size_t max_depth) {
  std::size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<nlohmann::json> ParseJsonBounded(std::string_view text, std::size_t max_depth) {
  if (auto at = TooDeepAt(text, max_depth)) {
    return absl::InvalidArgumentError(
        fmt::format("JSON nested deeper than {} levels (at byte {} of the value)", max_depth, *at));
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(e.what());
  }
}

}  // namespace gcpstream::util
