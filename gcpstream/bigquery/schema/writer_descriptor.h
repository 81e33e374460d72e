#ifndef GCPSTREAM_BIGQUERY_SCHEMA_WRITER_DESCRIPTOR_H_
#define GCPSTREAM_BIGQUERY_SCHEMA_WRITER_DESCRIPTOR_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>

#include <memory>

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

// The writer descriptor of a schema built into a descriptor pool of its own, ready to make row
// messages: what every row encoder fills. Thread-safe (the pool and factory are only read after
// Create; DynamicMessageFactory::GetPrototype locks).
class WriterRowType {
 public:
  // INVALID_ARGUMENT as WriterDescriptorFor.
  static absl::StatusOr<std::unique_ptr<WriterRowType>> Create(const TableSchema& schema);

  const TableSchema& schema() const { return schema_; }
  const google::protobuf::DescriptorProto& proto() const { return proto_; }
  const google::protobuf::Descriptor* descriptor() const { return descriptor_; }
  // An empty row message, owned by the caller.
  std::unique_ptr<google::protobuf::Message> NewRow() const;

 private:
  WriterRowType() = default;
  TableSchema schema_;
  google::protobuf::DescriptorProto proto_;
  google::protobuf::DescriptorPool pool_;
  mutable google::protobuf::DynamicMessageFactory factory_{&pool_};  // GetPrototype is non-const
  const google::protobuf::Descriptor* descriptor_ = nullptr;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SCHEMA_WRITER_DESCRIPTOR_H_
