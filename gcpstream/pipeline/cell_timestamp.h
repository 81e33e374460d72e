#ifndef GCPSTREAM_PIPELINE_CELL_TIMESTAMP_H_
#define GCPSTREAM_PIPELINE_CELL_TIMESTAMP_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "gcpstream/pipeline/pipeline_record.h"
#include "gcpstream/pipeline/pipeline_spec.h"

namespace gcpstream::pipeline {

// Reads a Bigtable cell timestamp from a record, as TimestampSpec says: a text field parsed with
// a strftime-style format (absl::ParseTime; the text is local time at `utc_offset`), or a number
// in seconds, milliseconds or microseconds. The result is microseconds since the Unix epoch,
// truncated to a whole millisecond (Bigtable tables have millisecond granularity, and a
// timestamp that is not a multiple of 1000 is refused).
//
// INVALID_ARGUMENT naming the field when it is missing, of the wrong type, or does not match the
// format. Stateless; thread-safe.
absl::StatusOr<std::int64_t> CellTimestampMicros(const TimestampSpec& spec,
                                                 const PipelineRecord& record);

// Parses "+HH:MM", "-HH:MM", "Z" or "UTC" into an offset from UTC.
absl::StatusOr<std::chrono::minutes> ParseUtcOffset(const std::string& text);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_CELL_TIMESTAMP_H_
