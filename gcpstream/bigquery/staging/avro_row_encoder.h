#ifndef GCPSTREAM_BIGQUERY_STAGING_AVRO_ROW_ENCODER_H_
#define GCPSTREAM_BIGQUERY_STAGING_AVRO_ROW_ENCODER_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/bigquery/schema/table_schema.h"

struct avro_obj_t;
struct avro_value_iface;

namespace gcpstream::bigquery::staging {

// Turns the serializer's rows — protobuf bytes of its writer descriptor, exactly what
// AppendRows would carry — into Avro binary datums of AvroStagingSchema(table), for FILE_LOADS
// staging files. Writer fields match columns by name, case-insensitively; a column the writer
// lacks stages as null (NULLABLE) or an empty array (REPEATED); a writer field no column has is
// not staged. Each column takes the wire types the Storage Write API documents for it:
//   INT64      int32, int64, uint32, sint*, sfixed*, fixed32, enum
//   FLOAT64    double, float          BOOL   bool          BYTES  bytes
//   STRING, JSON, GEOGRAPHY  string
//   DATE       int32/int64 days since 1970-01-01, or "YYYY-MM-DD"
//   DATETIME   int64 packed civil time (CivilTimeEncoding), or text
//   TIME       int64 packed time of day, or text
//   TIMESTAMP  int64 microseconds since the epoch, or text
//   NUMERIC / BIGNUMERIC  bytes (little-endian two's complement x 10^9 / 10^38), decimal
//              text, or an integer
//   RECORD     a message               REPEATED  a repeated field
// A load job is all or nothing, so every value a load would refuse is refused here, row by
// row, before it is staged: INVALID_ARGUMENT naming the column's dotted path for bytes that do
// not parse, a REQUIRED column missing, invalid UTF-8, a string or bytes over maxLength, a JSON
// column that is not JSON, a DATE/DATETIME/TIMESTAMP outside 0001-01-01..9999-12-31, a
// TIME/DATETIME whose packed fields are out of range, a NUMERIC with more than 29 integer
// digits or a BIGNUMERIC with more than 38 (stricter than BIGNUMERIC's exact bound of about
// 5.79e38), a non-finite value in NUMERIC text. Uses Avro C (libavro) for the datums.
// One encoder per thread (it reuses one Avro value and one message).
class AvroRowEncoder {
 public:
  // INVALID_ARGUMENT when AvroStagingSchema refuses `table`, the writer descriptor does not
  // build, a field's wire type cannot feed its column (naming both), or a REQUIRED column has
  // no writer field.
  static absl::StatusOr<std::unique_ptr<AvroRowEncoder>> Create(
      const TableSchema& table, const google::protobuf::DescriptorProto& writer);
  ~AvroRowEncoder();
  AvroRowEncoder(const AvroRowEncoder&) = delete;
  AvroRowEncoder& operator=(const AvroRowEncoder&) = delete;

  // The Avro schema (JSON text) the datums follow; the staging file's header carries it.
  const std::string& schema_json() const { return schema_json_; }

  // Appends one row's Avro datum to `out`; on failure `out` is left as it was.
  absl::Status encode(std::string_view proto_row, std::string* out);

  // How one column reads from the writer message (public for the .cc's helpers).
  struct Column {
    const TableFieldSchema* column = nullptr;
    const google::protobuf::FieldDescriptor* field = nullptr;  // null: the writer lacks it
    std::string path;                                          // dotted, for errors
    std::vector<Column> fields;                                // RECORD
  };

 private:
  AvroRowEncoder() = default;
  TableSchema table_;
  std::string schema_json_;
  google::protobuf::DescriptorPool pool_;
  google::protobuf::DynamicMessageFactory factory_;
  std::unique_ptr<google::protobuf::Message> message_;
  std::vector<Column> columns_;
  avro_obj_t* schema_ = nullptr;
  avro_value_iface* iface_ = nullptr;
  struct Value;
  std::unique_ptr<Value> value_;
};

}  // namespace gcpstream::bigquery::staging

#endif  // GCPSTREAM_BIGQUERY_STAGING_AVRO_ROW_ENCODER_H_
