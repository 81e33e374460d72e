#ifndef GCPSTREAM_BIGQUERY_SCHEMA_JSON_ROW_ENCODER_H_
#define GCPSTREAM_BIGQUERY_SCHEMA_JSON_ROW_ENCODER_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "gcpstream/bigquery/schema/table_schema.h"
#include "gcpstream/bigquery/schema/writer_descriptor.h"

namespace gcpstream::bigquery {

// Turns JSON rows into AppendRows rows for one table schema: the protobuf row of
// WriterDescriptorFor(schema), serialized. The JSON a row may hold per column type, strictly
// (anything else is refused, never coerced):
//   STRING, GEOGRAPHY, INTERVAL  a string (valid UTF-8; STRING within maxLength characters)
//   JSON       any JSON value, written as its compact text (nested at most 64 levels)
//   BYTES      a base64 string (within maxLength bytes)
//   INT64      an integer, or a string holding a decimal integer, within int64
//   FLOAT64    a number, or "NaN", "Infinity", "-Infinity"
//   BOOL       true / false
//   NUMERIC, BIGNUMERIC  a string holding a decimal, or an integer
//   DATE, DATETIME, TIME, TIMESTAMP  their text forms (wire_values.h); TIMESTAMP also an
//              integer of microseconds since the epoch
//   RECORD     an object, recursively           REPEATED  an array (null: empty)
// A missing or null NULLABLE column stays unset (NULL); a missing REQUIRED column and a key
// the schema does not have are refused. Thread-safe.
class JsonRowEncoder {
 public:
  static absl::StatusOr<std::unique_ptr<JsonRowEncoder>> Create(TableSchema schema);

  const TableSchema& schema() const { return row_type_->schema(); }
  // What AppendRows' first request carries as writer_schema.proto_descriptor.
  const google::protobuf::DescriptorProto& writer_descriptor() const { return row_type_->proto(); }

  // One row's bytes. INVALID_ARGUMENT naming the column's path and what was wrong: a row-level
  // failure for the sink's failure handler, not a reason to stop the job.
  absl::StatusOr<std::string> encode(const nlohmann::json& row) const;

 private:
  JsonRowEncoder() = default;
  std::unique_ptr<WriterRowType> row_type_;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SCHEMA_JSON_ROW_ENCODER_H_
