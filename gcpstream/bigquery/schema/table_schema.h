#ifndef GCPSTREAM_BIGQUERY_SCHEMA_TABLE_SCHEMA_H_
#define GCPSTREAM_BIGQUERY_SCHEMA_TABLE_SCHEMA_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "google/cloud/bigquery/storage/v1/table.pb.h"

namespace gcpstream::bigquery {

// A BigQuery column type, by its GoogleSQL name. RANGE is not supported yet.
enum class FieldType {
  kString,
  kBytes,
  kInt64,
  kFloat64,
  kNumeric,
  kBigNumeric,
  kBool,
  kTimestamp,
  kDate,
  kTime,
  kDatetime,
  kGeography,
  kJson,
  kInterval,
  kRecord,
};

enum class FieldMode { kNullable, kRequired, kRepeated };

// One column of a table schema, as the v2 REST `TableFieldSchema` describes it.
struct TableFieldSchema {
  std::string name;
  FieldType type = FieldType::kString;
  FieldMode mode = FieldMode::kNullable;
  std::vector<TableFieldSchema> fields;  // kRecord only; at least one
  std::int64_t max_length = 0;           // kString / kBytes; 0: unbounded
  std::string description;

  friend bool operator==(const TableFieldSchema&, const TableFieldSchema&) = default;
};

// A table's columns, in order.
struct TableSchema {
  std::vector<TableFieldSchema> fields;

  friend bool operator==(const TableSchema&, const TableSchema&) = default;
};

// The GoogleSQL name of a type ("INT64", "RECORD", ...).
std::string_view FieldTypeName(FieldType type);
std::string_view FieldModeName(FieldMode mode);
// A type from its GoogleSQL or legacy name (INTEGER, FLOAT, BOOLEAN, STRUCT, BIGDECIMAL),
// case-insensitively. INVALID_ARGUMENT for anything else.
absl::StatusOr<FieldType> ParseFieldType(std::string_view name);

// Checks the rules BigQuery applies to a schema ("Specifying a schema"): every column named,
// names at most 300 characters and unique (case-insensitively) among their siblings, a RECORD
// has at least one sub-column and nothing else does, RECORDs nest at most 15 levels, maxLength
// only on STRING/BYTES, at least one and at most 10,000 columns in all (quotas page).
// INVALID_ARGUMENT naming the column's dotted path.
absl::Status ValidateTableSchema(const TableSchema& schema);

// The REST shape: the array under `schema.fields` of a tables resource. Parsing accepts legacy
// type names, an absent mode (NULLABLE) and maxLength as a string or a number, and validates.
absl::StatusOr<TableSchema> TableSchemaFromJson(const nlohmann::json& fields);
nlohmann::json TableSchemaToJson(const TableSchema& schema);

// The Storage Write API's shape (GetWriteStream FULL view, AppendRowsResponse.updated_schema).
absl::StatusOr<TableSchema> TableSchemaFromStorage(
    const google::cloud::bigquery::storage::v1::TableSchema& schema);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SCHEMA_TABLE_SCHEMA_H_
