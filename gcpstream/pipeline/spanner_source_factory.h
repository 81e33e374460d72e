#ifndef GCPSTREAM_PIPELINE_SPANNER_SOURCE_FACTORY_H_
#define GCPSTREAM_PIPELINE_SPANNER_SOURCE_FACTORY_H_

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "gcpstream/pipeline/pipeline_source.h"
#include "gcpstream/pipeline/pipeline_spec.h"
#include "gcpstream/spanner/client/row.h"

namespace gcpstream::pipeline {

// A row as the fields of a pipeline record: one member per column, by the column's type —
// BOOL a boolean; INT64 an integer; FLOAT64/FLOAT32 a number ("NaN", "Infinity", "-Infinity"
// stay strings: JSON has no such numbers); NUMERIC a string (no precision is lost); STRING,
// DATE, TIMESTAMP strings as Spanner sends them; BYTES base64 text (what to_spanner's BYTES
// takes back); JSON the parsed document; ARRAY an array; STRUCT an object; NULL null. A column
// without a name is named "_<position>"; a repeated name keeps its first value. INVALID_ARGUMENT
// (from Value::FromProto) for a value that does not match its type; UNIMPLEMENTED for a type
// the client does not model.
absl::StatusOr<nlohmann::json> SpannerRowToJson(const spanner::Row& row);

// The `source: {type: spanner}` of a pipeline: a SpannerSource producing one record per row.
absl::StatusOr<PipelineSource> MakeSpannerPipelineSource(const SpannerSourceSpec& spec);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_SPANNER_SOURCE_FACTORY_H_
