#ifndef GCPSTREAM_BIGQUERY_SOURCE_BIGQUERY_READ_ROW_H_
#define GCPSTREAM_BIGQUERY_SOURCE_BIGQUERY_READ_ROW_H_

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/bigquery/schema/table_schema.h"

namespace gcpstream::bigquery {

// One value of a row read through the Storage Read API. What it means comes from its column
// (TableFieldSchema) — the value only holds the storage:
//   NULL (an unset NULLABLE column)                      → null
//   BOOL                                                  → bool
//   INT64; TIMESTAMP (µs since the epoch, UTC); TIME (µs since midnight); DATE (days since
//   1970-01-01)                                           → int64
//   FLOAT64                                               → double
//   STRING, JSON, GEOGRAPHY (WKT), DATETIME (the canonical "YYYY-MM-DDTHH:MM:SS[.ffffff]"),
//   BYTES (the raw bytes), NUMERIC / BIGNUMERIC (decimal text such as "-12.5")  → string
//   RECORD                → list: one value per sub-column, in the column's order
//   a REPEATED column     → list: one value per element, each of the column's type
// Immutable once built; safe to share between threads.
class BigQueryValue {
 public:
  using List = std::vector<BigQueryValue>;

  BigQueryValue() = default;  // null
  static BigQueryValue Bool(bool v) { return BigQueryValue(v); }
  static BigQueryValue Int64(std::int64_t v) { return BigQueryValue(v); }
  static BigQueryValue Double(double v) { return BigQueryValue(v); }
  static BigQueryValue String(std::string v) { return BigQueryValue(std::move(v)); }
  static BigQueryValue Of(List v) { return BigQueryValue(std::move(v)); }

  bool is_null() const { return std::holds_alternative<std::monostate>(v_); }
  // The stored value. FAILED_PRECONDITION when it holds another kind (or is null).
  absl::StatusOr<bool> as_bool() const;
  absl::StatusOr<std::int64_t> as_int64() const;
  absl::StatusOr<double> as_double() const;
  absl::StatusOr<std::string_view> as_string() const;
  absl::StatusOr<const List*> as_list() const;

  friend bool operator==(const BigQueryValue&, const BigQueryValue&) = default;

 private:
  template <typename V>
  explicit BigQueryValue(V v) : v_(std::move(v)) {}
  std::variant<std::monostate, bool, std::int64_t, double, std::string, List> v_;
};

// A row of a read session: the session's columns (shared by every row of the session) and one
// value per column, in the same order. Safe to share between threads once built.
struct BigQueryReadRow {
  std::shared_ptr<const TableSchema> schema;
  std::vector<BigQueryValue> values;

  // The value of the top-level column `name` (matched case-insensitively, as BigQuery names
  // are), or nullptr when the session has no such column.
  const BigQueryValue* find(std::string_view name) const;
  // The row as a JSON object keyed by column name: INT64 as a number, FLOAT64 as a number
  // (NaN and infinities as the strings "NaN", "Infinity", "-Infinity"), BOOL as a boolean,
  // TIMESTAMP as RFC 3339 text in UTC with microseconds ("2026-08-09T10:00:00.000000Z"),
  // DATE "YYYY-MM-DD", TIME "HH:MM:SS.ffffff", BYTES as base64, everything else as its text;
  // RECORD as an object, REPEATED as an array, NULL as null.
  nlohmann::json to_json() const;
};

// The JSON form BigQueryReadRow::to_json gives one value of `field`.
nlohmann::json BigQueryValueToJson(const TableFieldSchema& field, const BigQueryValue& value);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SOURCE_BIGQUERY_READ_ROW_H_
