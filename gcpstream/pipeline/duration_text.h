#ifndef GCPSTREAM_PIPELINE_DURATION_TEXT_H_
#define GCPSTREAM_PIPELINE_DURATION_TEXT_H_

#include <chrono>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gcpstream::pipeline {

// Parses a duration written with a unit: "250ms", "1s", "1.5s", "10min", "2h", "7d" ("0" alone
// is accepted). Units: ms, s, min (or m), h, d. The value must be a whole number of
// milliseconds ("1.5s" is, "0.5ms" is not). INVALID_ARGUMENT (naming the text and the accepted
// units) otherwise, and for negative values.
absl::StatusOr<std::chrono::milliseconds> ParseDuration(std::string_view text);

// The shortest exact spelling of a duration in the units above ("1s", "500ms", "10min").
std::string FormatDuration(std::chrono::milliseconds d);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_DURATION_TEXT_H_
