#ifndef GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_TABLE_SCHEMA_H_
#define GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_TABLE_SCHEMA_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/cloud/bigquery/storage/v1/table.pb.h"

namespace gcpstream::testing::bigquery_fake {

// One column of a table as the fake keeps it: the REST `TableFieldSchema` with the legacy type
// names folded to the standard ones (INTEGER -> INT64, FLOAT -> FLOAT64, BOOLEAN -> BOOL,
// STRUCT -> RECORD, BIGDECIMAL -> BIGNUMERIC) and an unset mode made NULLABLE.
struct Field {
  std::string name;
  std::string type;  // INT64, FLOAT64, NUMERIC, BIGNUMERIC, BOOL, STRING, BYTES, DATE, DATETIME,
                     // TIME, TIMESTAMP, JSON, GEOGRAPHY, INTERVAL, RANGE, RECORD
  std::string mode;  // NULLABLE, REQUIRED, REPEATED
  std::int64_t max_length = 0;  // STRING / BYTES; 0: none
  std::vector<Field> fields;    // RECORD only
};
using Schema = std::vector<Field>;

// Parses `schema.fields` of a REST table resource. INVALID_ARGUMENT names the first problem, as
// the tables.insert reference and the schema documentation describe: an empty, over-300-character
// or repeated (case-insensitively) name, an unknown type or mode, a RECORD without sub-fields or a
// non-RECORD with them, nesting deeper than 15 levels.
absl::StatusOr<Schema> ParseSchema(const nlohmann::json& fields);
nlohmann::json ToJson(const Schema& schema);
// The same schema as the Storage Write API shows it (GetWriteStream FULL, updated_schema).
google::cloud::bigquery::storage::v1::TableSchema ToStorageSchema(const Schema& schema);

// Whether `next` may replace `current` through tables.patch / tables.update: BigQuery's schema
// modification rules allow only adding NULLABLE or REPEATED columns (also inside RECORDs) and
// relaxing REQUIRED to NULLABLE. INVALID_ARGUMENT names the offending column otherwise (a
// dropped, re-typed or tightened column, or a new REQUIRED one).
absl::Status CheckWidening(const Schema& current, const Schema& next);

// The column named `name`, compared case-insensitively as BigQuery does; nullptr if none.
const Field* FindField(const Schema& schema, const std::string& name);

}  // namespace gcpstream::testing::bigquery_fake

#endif  // GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_TABLE_SCHEMA_H_
