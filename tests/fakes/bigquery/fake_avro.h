#ifndef GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_AVRO_H_
#define GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_AVRO_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/fakes/bigquery/fake_table_schema.h"

struct avro_obj_t;
struct avro_value_iface;

namespace gcpstream::testing::bigquery_fake {

// The Avro schema a read session over `columns` carries, following the Storage Read API's
// documented Avro mapping ("Avro schema details" in the Storage Read API docs): a record named
// __root__; BOOL boolean, INT64 long, FLOAT64 double, STRING string, BYTES bytes, NUMERIC bytes
// with decimal(38, 9), BIGNUMERIC bytes with decimal(77, 38), DATE int with date, TIME long with
// time-micros, TIMESTAMP long with timestamp-micros, DATETIME string with logicalType datetime,
// GEOGRAPHY and JSON string with sqlType, INTERVAL string, RECORD a record, REPEATED an array,
// NULLABLE a ["null", T] union.
std::string AvroSchemaFor(const Schema& columns);

// Encodes rows (RowDecoder's JSON shape) as Avro binary rows back to back, the way
// ReadRowsResponse.avro_rows.serialized_binary_rows carries them. Uses Avro C (libavro).
class AvroRowsWriter {
 public:
  static absl::StatusOr<std::unique_ptr<AvroRowsWriter>> Create(const Schema& columns);
  ~AvroRowsWriter();
  AvroRowsWriter(const AvroRowsWriter&) = delete;
  AvroRowsWriter& operator=(const AvroRowsWriter&) = delete;

  const std::string& schema_json() const { return schema_json_; }
  // Appends one row's bytes to `block`. INVALID_ARGUMENT for a value its column cannot hold.
  absl::Status append(const nlohmann::json& row, std::string* block);

 private:
  AvroRowsWriter() = default;
  Schema columns_;
  std::string schema_json_;
  avro_obj_t* schema_ = nullptr;
  avro_value_iface* iface_ = nullptr;
  struct Value;
  std::unique_ptr<Value> value_;
};

// A decimal string as the big-endian two's complement bytes of value x 10^scale (Avro's
// decimal). INVALID_ARGUMENT for text that is not a decimal or has more fractional digits.
absl::StatusOr<std::string> DecimalToTwosComplement(const std::string& text, int scale);
// A little-endian two's complement integer (the Storage Write API's NUMERIC bytes; reverse
// Avro's big-endian decimal first) as decimal text with `scale` fractional digits, trailing
// fractional zeros dropped. Empty bytes read as 0.
std::string DecimalFromTwosComplementLE(const std::string& bytes, int scale);

}  // namespace gcpstream::testing::bigquery_fake

#endif  // GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_AVRO_H_
