#ifndef GCPSTREAM_SPANNER_CLIENT_VALUE_H_
#define GCPSTREAM_SPANNER_CLIENT_VALUE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "google/protobuf/struct.pb.h"
#include "google/spanner/v1/type.pb.h"

namespace gcpstream::spanner {

// The SQL dialect of a database. It is a property of the database, never an option of a
// connector: both dialects share one wire format, and differ in which type annotations a
// result carries (PostgreSQL NUMERIC is NUMERIC + PG_NUMERIC, JSONB is JSON + PG_JSONB) and in
// how identifiers and the information schema are spelt.
enum class Dialect { kGoogleSql, kPostgreSql };
std::string_view DialectName(Dialect dialect);  // "GOOGLE_STANDARD_SQL" / "POSTGRESQL"

// One typed Spanner value, NULL included, in its wire form.
//
// A value is its `google.spanner.v1.Type` plus the `google.protobuf.Value` that carries it, as
// the Spanner API reference ("TypeCode") defines the encoding:
//   BOOL               bool_value
//   INT64              string_value, decimal ("-9223372036854775808")
//   FLOAT64, FLOAT32   number_value, or string_value "NaN", "Infinity", "-Infinity"
//   NUMERIC            string_value; GoogleSQL: at most 29 integer and 9 fraction digits;
//                      PostgreSQL (annotation PG_NUMERIC): any precision, or "NaN"
//   STRING             string_value, UTF-8
//   BYTES              string_value, base64 (RFC 4648 with padding)
//   DATE               string_value "YYYY-MM-DD", 0001-01-01 through 9999-12-31
//   TIMESTAMP          string_value, RFC 3339 in UTC ("…T…Z"), nanosecond precision,
//                      0001-01-01T00:00:00Z through 9999-12-31T23:59:59.999999999Z
//   JSON               string_value holding a JSON document (PG_JSONB for PostgreSQL)
//   ARRAY              list_value of elements (an element may be NULL; no array of arrays)
//   STRUCT             list_value of the fields in order (results and query parameters only)
//   NULL of any type   null_value
// Factories validate, so a Value that exists is one the service can parse; FromProto does the
// same checks on what a result set carries. Accessors decode and answer FAILED_PRECONDITION
// when asked for the wrong type or for a NULL.
//
// Values are immutable and cheap to move; thread-compatible.
class Value {
 public:
  using Type = google::spanner::v1::Type;

  // NULL of `type`.
  static Value Null(Type type);
  static Value Bool(bool v);
  static Value Int64(std::int64_t v);
  static Value Float64(double v);  // NaN and ±infinity travel as strings
  static Value Float32(float v);
  // INVALID_ARGUMENT when `v` is not UTF-8, naming the offset of the first bad byte.
  static absl::StatusOr<Value> String(std::string v);
  // Raw bytes; base64 is applied here.
  static Value Bytes(std::string_view raw);
  // GoogleSQL NUMERIC: an optional sign, digits, optionally '.' and digits. INVALID_ARGUMENT
  // beyond 29 integer or 9 fraction digits (the type's precision 38, scale 9): nothing is
  // rounded behind the caller's back.
  static absl::StatusOr<Value> Numeric(std::string_view decimal);
  // PostgreSQL NUMERIC: any precision up to the type's 131072 integer and 16383 fraction
  // digits, or "NaN".
  static absl::StatusOr<Value> PgNumeric(std::string_view decimal);
  // INVALID_ARGUMENT outside 0001-01-01 … 9999-12-31.
  static absl::StatusOr<Value> Date(absl::CivilDay day);
  // INVALID_ARGUMENT outside the TIMESTAMP range. Nanosecond precision is kept.
  static absl::StatusOr<Value> Timestamp(absl::Time t);
  // The placeholder Spanner replaces with the commit timestamp in a mutation
  // ("spanner.commit_timestamp()"; the column needs allow_commit_timestamp).
  static Value CommitTimestamp();
  // INVALID_ARGUMENT when `json` is not one valid JSON document.
  static absl::StatusOr<Value> Json(std::string json);
  static absl::StatusOr<Value> PgJsonb(std::string json);
  // An array of `element_type`; every element must have that type (or be its NULL).
  static absl::StatusOr<Value> Array(Type element_type, std::vector<Value> elements);
  // A struct with named (possibly empty-named) fields in order.
  static absl::StatusOr<Value> Struct(std::vector<std::pair<std::string, Value>> fields);

  // A value read from the wire, checked against its type as the factories check. A TIMESTAMP
  // with a UTC offset (or 't', 'z', a space for 'T') is kept as the same instant in the
  // canonical UTC form, the only one Spanner takes in a mutation. INVALID_ARGUMENT naming the type
  // and what is wrong; UNIMPLEMENTED for a type this client does not model (PROTO, ENUM, INTERVAL,
  // UUID).
  static absl::StatusOr<Value> FromProto(Type type, google::protobuf::Value value);

  const Type& type() const { return type_; }
  const google::protobuf::Value& proto() const { return value_; }
  google::protobuf::Value&& release_proto() && { return std::move(value_); }
  bool is_null() const { return value_.kind_case() == google::protobuf::Value::kNullValue; }

  absl::StatusOr<bool> as_bool() const;
  absl::StatusOr<std::int64_t> as_int64() const;
  absl::StatusOr<double> as_float64() const;      // FLOAT32 widens
  absl::StatusOr<std::string> as_string() const;  // STRING, JSON, NUMERIC as text
  absl::StatusOr<std::string> as_bytes() const;   // decoded
  absl::StatusOr<absl::CivilDay> as_date() const;
  absl::StatusOr<absl::Time> as_timestamp() const;
  absl::StatusOr<std::vector<Value>> as_array() const;
  absl::StatusOr<std::vector<std::pair<std::string, Value>>> as_struct() const;

  // "INT64", "ARRAY<STRING>", "NUMERIC<PG_NUMERIC>", "STRUCT<a INT64>" — for messages.
  static std::string TypeName(const Type& type);

  friend bool operator==(const Value& a, const Value& b);

 private:
  Value(Type type, google::protobuf::Value value)
      : type_(std::move(type)), value_(std::move(value)) {}
  Type type_;
  google::protobuf::Value value_;
};

// Type helpers: MakeType(INT64), ArrayOf(MakeType(STRING)), …
Value::Type MakeType(google::spanner::v1::TypeCode code,
                     google::spanner::v1::TypeAnnotationCode annotation =
                         google::spanner::v1::TYPE_ANNOTATION_CODE_UNSPECIFIED);
Value::Type ArrayOf(Value::Type element);

// RFC 3339 in UTC with as many fraction digits as needed (none, or up to nine).
std::string FormatTimestamp(absl::Time t);
// Parses what FormatTimestamp writes, and any UTC offset; INVALID_ARGUMENT otherwise.
absl::StatusOr<absl::Time> ParseTimestamp(std::string_view text);

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CLIENT_VALUE_H_
