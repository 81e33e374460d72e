#ifndef GCPSTREAM_BIGQUERY_SOURCE_AVRO_ROW_DECODER_H_
#define GCPSTREAM_BIGQUERY_SOURCE_AVRO_ROW_DECODER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/bigquery/schema/table_schema.h"
#include "gcpstream/bigquery/source/bigquery_read_row.h"

struct avro_obj_t;
struct avro_value_iface;

namespace gcpstream::bigquery {

// How one column is read out of Avro: its BigQuery type, and the decimal scale of a NUMERIC /
// BIGNUMERIC (the Avro `decimal` logical type's scale).
struct AvroColumnPlan {
  FieldType type = FieldType::kString;
  int scale = 0;
  std::vector<AvroColumnPlan> fields;  // RECORD
};

// The columns of a read session, from the Avro schema the session carries (ReadSession.
// avro_schema). The Storage Read API documents its Avro mapping as:
//   BOOL boolean · INT64 long · FLOAT64 double · STRING string · BYTES bytes
//   NUMERIC bytes + decimal(38, 9) · BIGNUMERIC bytes + decimal(77, 38)
//   DATE int + date · TIME long + time-micros · TIMESTAMP long + timestamp-micros
//   DATETIME string + logicalType "datetime" · GEOGRAPHY string + sqlType "GEOGRAPHY"
//   JSON string + sqlType "JSON" · RECORD record · REPEATED array · NULLABLE ["null", T]
// and a top-level record named `__root__`. A union of anything but null and one type, a map,
// an enum, a fixed, a named type used before it is defined, or a column name the schema repeats
// is refused with INVALID_ARGUMENT naming the column's dotted path.
struct AvroReadSchema {
  std::shared_ptr<const TableSchema> columns;
  std::vector<AvroColumnPlan> plan;  // one per top-level column
};
absl::StatusOr<AvroReadSchema> ParseAvroReadSchema(std::string_view avro_schema_json);

// Decodes the `serialized_binary_rows` of a ReadRowsResponse — Avro binary rows back to back,
// without the container file's framing — into BigQueryRows. Built once per read session schema;
// one decoder per thread (it reuses one Avro value). Uses Avro C (libavro).
class AvroRowDecoder {
 public:
  // INVALID_ARGUMENT when the schema does not parse (see ParseAvroReadSchema) or libavro
  // refuses it.
  static absl::StatusOr<std::unique_ptr<AvroRowDecoder>> Create(std::string_view avro_schema_json);
  ~AvroRowDecoder();
  AvroRowDecoder(const AvroRowDecoder&) = delete;
  AvroRowDecoder& operator=(const AvroRowDecoder&) = delete;

  const std::shared_ptr<const TableSchema>& columns() const { return schema_.columns; }

  // Appends exactly `row_count` rows decoded from `block` to `out`. DATA_LOSS, naming the row's
  // index in the block, when the bytes hold fewer rows, more bytes than `row_count` rows, or a
  // value of a kind its column cannot hold; on failure `out` is left as it was.
  absl::Status decode(std::string_view block, std::int64_t row_count,
                      std::vector<BigQueryReadRow>& out);

 private:
  AvroRowDecoder() = default;
  AvroReadSchema schema_;
  avro_obj_t* avro_schema_ = nullptr;
  avro_value_iface* iface_ = nullptr;
  struct Value;
  std::unique_ptr<Value> value_;  // the reused Avro value (avro_value_t)
};

// Decimal text of a big-endian two's complement integer scaled by 10^-scale, without trailing
// fractional zeros ("-12.5", "0", "1e-9" written out as "0.000000001"). Empty bytes read as 0.
std::string DecimalFromTwosComplement(std::string_view big_endian, int scale);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SOURCE_AVRO_ROW_DECODER_H_
