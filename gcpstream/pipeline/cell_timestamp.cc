#include "gcpstream/pipeline/cell_timestamp.h"

#include <fmt/format.h>

#include <cmath>

#include "absl/time/time.h"

namespace gcpstream::pipeline {

absl::StatusOr<std::chrono::minutes> ParseUtcOffset(const std::string& text) {
  if (text == "Z" || text == "UTC" || text.empty()) return std::chrono::minutes(0);
  int hours = 0;
  int minutes = 0;
  char sign = 0;
  char colon = 0;
  if (text.size() == 6 &&
      std::sscanf(text.c_str(), "%c%2d%c%2d", &sign, &hours, &colon, &minutes) == 4 &&
      (sign == '+' || sign == '-') && colon == ':' && hours <= 23 && minutes <= 59) {
    const int total = hours * 60 + minutes;
    return std::chrono::minutes(sign == '-' ? -total : total);
  }
  return absl::InvalidArgumentError(
      fmt::format("'{}' is not a UTC offset: write +HH:MM, -HH:MM or UTC", text));
}

absl::StatusOr<std::int64_t> CellTimestampMicros(const TimestampSpec& spec,
                                                 const PipelineRecord& record) {
  const nlohmann::json* value = nullptr;
  std::string attribute_text;
  if (record.fields.is_object()) {
    auto it = record.fields.find(spec.field);
    if (it != record.fields.end()) value = &*it;
  }
  nlohmann::json from_attribute;
  if (value == nullptr) {
    auto attr = record.attributes.find(spec.field);
    if (attr == record.attributes.end()) {
      return absl::InvalidArgumentError(
          fmt::format("the record has no timestamp field '{}'", spec.field));
    }
    from_attribute = attr->second;
    value = &from_attribute;
  }
  std::int64_t micros = 0;
  if (spec.format) {
    if (!value->is_string()) {
      return absl::InvalidArgumentError(
          fmt::format("timestamp field '{}' must be text in the format \"{}\", got {}", spec.field,
                      *spec.format, value->dump()));
    }
    const std::string text = value->get<std::string>();
    absl::Time t;
    std::string err;
    if (!absl::ParseTime(*spec.format, text, absl::UTCTimeZone(), &t, &err)) {
      return absl::InvalidArgumentError(
          fmt::format("timestamp field '{}': \"{}\" does not match the format \"{}\" ({})",
                      spec.field, text, *spec.format, err));
    }
    micros = absl::ToUnixMicros(t) -
             std::chrono::duration_cast<std::chrono::microseconds>(spec.utc_offset).count();
  } else {
    double number = 0;
    if (value->is_number()) {
      number = value->get<double>();
    } else if (value->is_string()) {
      const std::string text = value->get<std::string>();
      char* end = nullptr;
      number = std::strtod(text.c_str(), &end);
      if (text.empty() || end == nullptr || *end != '\0') {
        return absl::InvalidArgumentError(
            fmt::format("timestamp field '{}' must be a number, got \"{}\"", spec.field, text));
      }
    } else {
      return absl::InvalidArgumentError(
          fmt::format("timestamp field '{}' must be a number, got {}", spec.field, value->dump()));
    }
    double scale = 1000;  // ms -> µs
    if (spec.unit == TimestampSpec::Unit::kSeconds) scale = 1'000'000;
    if (spec.unit == TimestampSpec::Unit::kMicros) scale = 1;
    const double scaled = number * scale;
    if (!std::isfinite(scaled) || std::fabs(scaled) > 9.2e18) {
      return absl::InvalidArgumentError(
          fmt::format("timestamp field '{}' is out of range: {}", spec.field, value->dump()));
    }
    micros = static_cast<std::int64_t>(scaled);
  }
  // Whole milliseconds, rounding toward negative infinity.
  std::int64_t ms = micros / 1000;
  if (micros % 1000 < 0) --ms;
  return ms * 1000;
}

}  // namespace gcpstream::pipeline
