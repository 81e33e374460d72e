#ifndef GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_AVRO_LOAD_H_
#define GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_AVRO_LOAD_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/fakes/bigquery/fake_table_schema.h"

namespace gcpstream::testing::bigquery_fake {

// Reads one Avro object container file the way a load job with sourceFormat AVRO does
// (BigQuery "Loading Avro data from Cloud Storage"; Avro 1.11 specification, "Object Container
// Files"), into rows of `table` in RowDecoder's JSON shape (fake_row_decoder.h):
//  - the header's magic, metadata map (avro.schema, avro.codec) and sync marker; blocks of
//    the null, deflate or zstandard codec (snappy is refused: the fake has no snappy), each
//    followed by the sync marker; the datums decoded with Avro C;
//  - the top-level record's fields match columns by name, case-insensitively; a field the
//    table lacks is ignored (what BigQuery does when the load carries the table's schema); a
//    column the file lacks loads null, and a REQUIRED one fails the load;
//  - with `logical_types` (useAvroLogicalTypes), TIMESTAMP needs long + timestamp-micros,
//    DATE int + date, TIME long + time-micros, DATETIME long + local-timestamp-micros (or
//    string + datetime), NUMERIC / BIGNUMERIC bytes + decimal (its scale is used); without
//    it the raw Avro type must match the column (long → INT64), as BigQuery documents.
//    INT64 takes int or long, FLOAT64 float or double, STRING / JSON / GEOGRAPHY string, BYTES
//    bytes, RECORD a record, REPEATED an array, NULLABLE a union of null and the type.
// Everything refused is INVALID_ARGUMENT naming the byte offset or the column: the load fails
// as a whole. Thread-safe (no state).
absl::StatusOr<std::vector<nlohmann::json>> ReadAvroForLoad(std::string_view file,
                                                            const Schema& table,
                                                            bool logical_types);

}  // namespace gcpstream::testing::bigquery_fake

#endif  // GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_AVRO_LOAD_H_
