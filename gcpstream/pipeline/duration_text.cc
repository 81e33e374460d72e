#include "gcpstream/pipeline/duration_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace gcpstream::pipeline {

absl::StatusOr<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  const std::string s(text);
  auto invalid = [&] {
    return absl::InvalidArgumentError(fmt::format(
        "'{}' is not a duration: write a number with a unit, one of ms, s, min, h, d (e.g. 500ms, "
        "1s, 10min)",
        s));
  };
  if (s == "0") return std::chrono::milliseconds(0);
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0 || i == s.size()) return invalid();
  const std::string number = s.substr(0, i);
  std::string unit = s.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (end == nullptr || *end != '\0' || !std::isfinite(value) || value < 0) return invalid();
  double scale = 0;
  if (unit == "ms") {
    scale = 1;
  } else if (unit == "s") {
    scale = 1000;
  } else if (unit == "min" || unit == "m") {
    scale = 60'000;
  } else if (unit == "h") {
    scale = 3'600'000;
  } else if (unit == "d") {
    scale = 86'400'000;
  } else {
    return invalid();
  }
  const double ms = value * scale;
  // Durations are kept in milliseconds as 64-bit integers: anything beyond about 292 million
  // years would wrap, and a non-zero value below a millisecond would read as 0 ("off").
  if (ms >= 9.2e18) {
    return absl::InvalidArgumentError(fmt::format(
        "'{}' is too large to be a duration (the largest is about 106,000,000,000d)", s));
  }
  const auto rounded = static_cast<std::int64_t>(std::llround(ms));
  if (rounded == 0 && value > 0) {
    return absl::InvalidArgumentError(fmt::format(
        "'{}' is below the 1ms resolution of durations: write 0 for none, or at least 1ms", s));
  }
  // A fraction of a millisecond would be rounded away unseen (0.5ms would run as 1ms). The
  // tolerance only absorbs the binary representation of decimal text such as 0.1s (a few
  // units in the last place of `ms`), far below any fraction one can write in a duration.
  if (std::fabs(ms - static_cast<double>(rounded)) > 1e-6 + ms * 1e-14) {
    return absl::InvalidArgumentError(
        fmt::format("'{}' is not a whole number of milliseconds, the resolution of durations", s));
  }
  return std::chrono::milliseconds(rounded);
}

std::string FormatDuration(std::chrono::milliseconds d) {
  const std::int64_t ms = d.count();
  if (ms == 0) return "0";
  if (ms % 86'400'000 == 0) return fmt::format("{}d", ms / 86'400'000);
  if (ms % 3'600'000 == 0) return fmt::format("{}h", ms / 3'600'000);
  if (ms % 60'000 == 0) return fmt::format("{}min", ms / 60'000);
  if (ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
  return fmt::format("{}ms", ms);
}

}  // namespace gcpstream::pipeline
