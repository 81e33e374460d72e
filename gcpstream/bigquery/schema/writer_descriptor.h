#ifndef GCPSTREAM_BIGQUERY_SCHEMA_WRITER_DESCRIPTOR_H_
#define GCPSTREAM_BIGQUERY_SCHEMA_WRITER_DESCRIPTOR_H_

#include <google/protobuf/descriptor.pb.h>

#include "absl/status/statusor.h"
#include "gcpstream/bigquery/schema/table_schema.h"

namespace gcpstream::bigquery {

// The writer schema AppendRows needs for rows of `schema`: one self-contained proto2 message
// ("Row"), a RECORD column as a nested message type, every field optional (the service, not
// the descriptor, enforces REQUIRED) or repeated, and each column on the wire type the Storage
// Write API documents for it (wire_values.h):
//   STRING, JSON, GEOGRAPHY, INTERVAL -> string    BYTES -> bytes        BOOL -> bool
//   INT64 -> int64     FLOAT64 -> double           NUMERIC, BIGNUMERIC -> bytes (scaled)
//   DATE -> int32 (days)   DATETIME, TIME -> int64 (packed)   TIMESTAMP -> int64 (µs)
// A column whose name is not a protobuf identifier (a flexible column name) gets the field
// name "_col<N>" and carries its real name in the `column_name` field option
// (google/cloud/bigquery/storage/v1/annotations.proto). Field numbers follow column order from 1.
// INVALID_ARGUMENT if the schema is invalid (ValidateTableSchema).
absl::StatusOr<google::protobuf::DescriptorProto> WriterDescriptorFor(const TableSchema& schema);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SCHEMA_WRITER_DESCRIPTOR_H_
