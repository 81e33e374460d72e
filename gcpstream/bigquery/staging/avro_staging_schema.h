#ifndef GCPSTREAM_BIGQUERY_STAGING_AVRO_STAGING_SCHEMA_H_
#define GCPSTREAM_BIGQUERY_STAGING_AVRO_STAGING_SCHEMA_H_

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "gcpstream/bigquery/schema/table_schema.h"

namespace gcpstream::bigquery::staging {

// The Avro schema FILE_LOADS stages rows of `schema` in, for load jobs that set
// useAvroLogicalTypes (BigQuery "Loading Avro data from Cloud Storage", logical types):
//   STRING string · BYTES bytes · INT64 long · FLOAT64 double · BOOL boolean
//   NUMERIC bytes + decimal(38, 9) · BIGNUMERIC bytes + decimal(77, 38)
//   TIMESTAMP long + timestamp-micros · DATE int + date · TIME long + time-micros
//   DATETIME long + local-timestamp-micros · JSON, GEOGRAPHY string + sqlType
//   RECORD record · REPEATED array of the element type · NULLABLE ["null", T] (null first,
//   so an absent value needs no default)
// The top-level record is named `__root__`, nested records `__record_<N>` in depth-first
// order (Avro needs every record named, once). INVALID_ARGUMENT naming the column's dotted
// path for an INTERVAL column (BigQuery's Avro loads have no INTERVAL mapping) or a column
// name Avro cannot carry (letters, digits and underscores, not starting with a digit: the
// flexible column names BigQuery allows elsewhere are refused), or a schema
// ValidateTableSchema refuses.
absl::StatusOr<nlohmann::json> AvroStagingSchema(const TableSchema& schema);

}  // namespace gcpstream::bigquery::staging

#endif  // GCPSTREAM_BIGQUERY_STAGING_AVRO_STAGING_SCHEMA_H_
