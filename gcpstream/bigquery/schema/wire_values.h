#ifndef GCPSTREAM_BIGQUERY_SCHEMA_WIRE_VALUES_H_
#define GCPSTREAM_BIGQUERY_SCHEMA_WIRE_VALUES_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"

// The Storage Write API's protobuf encodings of BigQuery values ("Supported protocol buffer
// data types" in the Storage Write API docs). Every function is pure and thread-safe; each
// failure is INVALID_ARGUMENT naming the value and the range it broke.
namespace gcpstream::bigquery::wire {

// NUMERIC: the value x 10^9 as a little-endian two's-complement integer, in the fewest bytes
// that keep the sign. `decimal` is [+-]digits[.digits]; at most 29 integer and 9 fractional
// digits (NUMERIC's precision 38, scale 9).
absl::StatusOr<std::string> EncodeNumeric(std::string_view decimal);
// BIGNUMERIC: the same with 10^38; at most 38 integer and 38 fractional digits.
absl::StatusOr<std::string> EncodeBigNumeric(std::string_view decimal);

// DATE: days since 1970-01-01, for 0001-01-01 .. 9999-12-31. `text` is YYYY-MM-DD.
absl::StatusOr<std::int32_t> EncodeDate(absl::CivilDay day);
absl::StatusOr<std::int32_t> EncodeDate(std::string_view text);

// DATETIME: the packed civil time (bit 0..19 microseconds, 20..25 second, 26..31 minute,
// 32..36 hour, 37..41 day, 42..45 month, 46..59 year — the CivilTimeEncoding layout). `text`
// is YYYY-MM-DD[T ]HH:MM[:SS[.ffffff]].
absl::StatusOr<std::int64_t> EncodeDatetime(absl::CivilSecond second, int micros);
absl::StatusOr<std::int64_t> EncodeDatetime(std::string_view text);
// TIME: the low 37 bits of the same layout. `text` is HH:MM[:SS[.ffffff]].
absl::StatusOr<std::int64_t> EncodeTime(int hour, int minute, int second, int micros);
absl::StatusOr<std::int64_t> EncodeTime(std::string_view text);

// TIMESTAMP: microseconds since the epoch (finer precision is truncated toward the past), for
// 0001-01-01 00:00:00 .. 9999-12-31 23:59:59.999999 UTC. `text` is RFC 3339 or
// "YYYY-MM-DD HH:MM:SS[.f][+HH:MM| UTC]" (a missing zone is UTC).
absl::StatusOr<std::int64_t> EncodeTimestamp(absl::Time time);
absl::StatusOr<std::int64_t> EncodeTimestamp(std::string_view text);

}  // namespace gcpstream::bigquery::wire

#endif  // GCPSTREAM_BIGQUERY_SCHEMA_WIRE_VALUES_H_
