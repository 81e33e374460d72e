#ifndef GCPSTREAM_BIGQUERY_SCHEMA_PROTO_ROW_CONVERTER_H_
#define GCPSTREAM_BIGQUERY_SCHEMA_PROTO_ROW_CONVERTER_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/bigquery/schema/proto_schema_options.h"
#include "gcpstream/bigquery/schema/table_schema.h"
#include "gcpstream/bigquery/schema/writer_descriptor.h"

namespace gcpstream::bigquery {

// Derives a BigQuery table schema from a protobuf message descriptor (a generated message's or
// one built at run time) and rewrites each message of that type into the AppendRows row of that
// schema (WriterRowType), so the table sees BigQuery types rather than protobuf's.
//
// The mapping ("Protobuf messages" in docs/bigquery.md):
//   int32, sint32, sfixed32, int64, sint64, sfixed64, uint32, fixed32  INT64 (unsigned widened)
//   uint64, fixed64        INT64; a value above INT64_MAX fails the row
//   float, double          FLOAT64            bool, string, bytes  BOOL, STRING, BYTES
//   enum                   STRING: the value's name (an unknown number: protobuf's
//                          UNKNOWN_ENUM_VALUE_<Enum>_<n> placeholder name)
//   Timestamp              TIMESTAMP, microseconds (finer digits truncated toward the past)
//   Duration               INT64 microseconds (truncated toward zero); out of protobuf's range
//                          (±315,576,000,000 s) fails the row
//   FieldMask              STRING: the paths as declared, joined by ","
//   the nine wrappers      their scalar, NULLABLE (unset stays NULL)
//   Struct, Value, ListValue  JSON: the canonical protobuf JSON
//   Any                    RECORD<type_url STRING, value BYTES>, not unpacked
//   other messages         RECORD, recursively    map<K, V>  REPEATED RECORD<key, value>
//   a marked message or string  JSON (canonical protobuf JSON / the string verbatim)
//   a marked string        GEOGRAPHY (verbatim)
// A marked string without presence is left unset (NULL) when empty. Field numbers of the row
// follow column order; column names are the declared field names. Extensions and unknown fields
// are not written (a proto2 closed enum keeps an unknown number among the unknown fields, so
// such a column gets the field's default or NULL, as protobuf itself reads it). A message named
// like a well-known type must be protobuf's own definition of it.
//
// Derivation fails with INVALID_ARGUMENT (naming the dotted field path) for: a recursive message,
// sibling names equal but for case (the Storage Write API lowercases them), a message with no
// fields, a path matching no field, a marked field of the wrong kind (JSON: a message that is not
// a map, or a string; GEOGRAPHY: a string), a field marked both JSON and GEOGRAPHY, an option
// number whose value is not encoded as a singular bool, a look-alike of a well-known type,
// RECORDs nested deeper than 15 levels or more than 10,000 columns (both checked while deriving,
// so a deep chain or a type reused at every level fails at once), and what ValidateTableSchema
// refuses. Thread-safe after Create.
class ProtoRowConverter {
 public:
  // `descriptor` must outlive the converter (a generated message's always does).
  static absl::StatusOr<std::unique_ptr<ProtoRowConverter>> Create(
      const google::protobuf::Descriptor* descriptor, ProtoSchemaOptions options = {});
  ~ProtoRowConverter();

  const TableSchema& schema() const;
  // What AppendRows' first request carries as writer_schema.proto_descriptor.
  const google::protobuf::DescriptorProto& writer_descriptor() const;
  const google::protobuf::Descriptor* message_type() const { return descriptor_; }

  // One row's bytes. A message of the same type from another descriptor pool (the same
  // definition) is re-read through its wire form; any other type, or another definition under
  // the same name, is refused. INVALID_ARGUMENT naming the field for a row-level failure: uint64
  // above INT64_MAX, a Duration or Timestamp out of range, a proto2 `required` field unset under
  // derive_required_columns, invalid UTF-8 in a string (also inside a JSON column's message), a
  // google.protobuf.Value with no kind or a non-finite number, a message the JSON printer
  // refuses (an Any of a type the pool does not know).
  absl::StatusOr<std::string> encode(const google::protobuf::Message& message) const;

  struct Column;  // the conversion plan of one column (internal)

 private:
  ProtoRowConverter() = default;
  const google::protobuf::Descriptor* descriptor_ = nullptr;
  ProtoSchemaOptions options_;
  std::unique_ptr<std::vector<Column>> plan_;
  std::unique_ptr<WriterRowType> row_type_;
  // For re-reading a message from another pool when descriptor_ is not a generated type.
  mutable google::protobuf::DynamicMessageFactory dynamic_factory_;
  // Descriptors from other pools already compared with descriptor_ (by definition).
  bool SameForeignDefinition(const google::protobuf::Descriptor& other) const;
  mutable std::mutex foreign_mu_;
  mutable std::map<const google::protobuf::Descriptor*, bool> foreign_;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SCHEMA_PROTO_ROW_CONVERTER_H_
