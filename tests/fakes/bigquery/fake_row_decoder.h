#ifndef GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_ROW_DECODER_H_
#define GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_ROW_DECODER_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "tests/fakes/bigquery/fake_table_schema.h"

namespace gcpstream::testing::bigquery_fake {

// Reads AppendRows' serialized rows the way the Storage Write API documents it ("Supported
// protocol buffer and Arrow data types" in the Storage Write API docs): the writer schema is a
// self-contained proto2 DescriptorProto whose fields match columns by name, case-insensitively;
// each column accepts the wire types listed there:
//   INT64      int32, int64, uint32, sint*, sfixed*, fixed32, enum
//   FLOAT64    double, float                      BOOL   bool          BYTES   bytes
//   STRING, JSON, GEOGRAPHY, INTERVAL  string
//   DATE       int32/int64 days since 1970-01-01, or "YYYY-MM-DD"
//   DATETIME   int64 packed civil time (year:14 month:4 day:5 hour:5 minute:6 second:6
//              micros:20, the CivilTimeEncoding layout), or a string
//   TIME       int64 packed (hour:5 minute:6 second:6 micros:20), or a string
//   TIMESTAMP  int64 microseconds since the epoch, or a string
//   NUMERIC / BIGNUMERIC  bytes (little-endian two's complement of value x 10^9 / x 10^38),
//              a decimal string, an integer or a double
//   RECORD / RANGE  a message                    REPEATED  a repeated field
// A row decodes to a JSON object keyed by the table's column names: INT64 and TIMESTAMP
// (microseconds) as decimal strings, FLOAT64 as a number, BOOL as a boolean, BYTES as base64,
// DATE/DATETIME/TIME in their canonical text, NUMERIC/BIGNUMERIC as a decimal string, RECORD as
// an object, REPEATED as an array, an absent NULLABLE column as null.
class RowDecoder {
 public:
  // Why the writer schema was refused. kExtraField is the documented
  // SCHEMA_MISMATCH_EXTRA_FIELDS case (a field the table does not have); everything else
  // (an unbuildable descriptor, a wire type the column cannot take, a repeated field for a
  // non-repeated column or the reverse) is kInvalid.
  enum class Refusal { kNone, kExtraField, kInvalid };

  // `refusal` (required) tells which kind of refusal an error status is.
  static absl::StatusOr<std::unique_ptr<RowDecoder>> Create(
      const google::protobuf::DescriptorProto& writer_schema, const Schema& table,
      Refusal* refusal);

  // Whether the writer schema carries the CDC pseudocolumns (fake_cdc.h): then each decoded
  // row also has "_CHANGE_TYPE" and, when set, "_CHANGE_SEQUENCE_NUMBER" as strings, and a row
  // with another change type or an invalid sequence is a row error.
  bool cdc() const { return change_type_ != nullptr; }

  // One row. INVALID_ARGUMENT with the per-row message the service would put in a RowError:
  // bytes that do not parse, a REQUIRED column missing, invalid UTF-8, a value outside its
  // type's range (dates 0001-01-01..9999-12-31, NUMERIC 29 integer digits, BIGNUMERIC 38), a
  // string over the column's maxLength, a JSON column that is not JSON.
  absl::StatusOr<nlohmann::json> decode(const std::string& bytes) const;

 private:
  RowDecoder() = default;
  google::protobuf::DescriptorPool pool_;
  mutable google::protobuf::DynamicMessageFactory factory_{&pool_};  // GetPrototype is not const
  const google::protobuf::Descriptor* descriptor_ = nullptr;
  const google::protobuf::FieldDescriptor* change_type_ = nullptr;
  const google::protobuf::FieldDescriptor* change_sequence_ = nullptr;
  Schema table_;
};

}  // namespace gcpstream::testing::bigquery_fake

#endif  // GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_ROW_DECODER_H_
