#ifndef GCPSTREAM_BENCH_BIGQUERY_BENCH_ROWS_H_
#define GCPSTREAM_BENCH_BIGQUERY_BENCH_ROWS_H_

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "gcpstream/bigquery/sink/bigquery_serialization_schema.h"

namespace gcpstream::bench {

// The rows the BigQuery write benchmarks send: n, a code of 97 values and a 64-byte payload
// (about 90 bytes as protobuf), from one JSON serializer.
inline bigquery::TableSchema BigQueryBenchSchema() {
  return *bigquery::TableSchemaFromJson(nlohmann::json::parse(R"([
    {"name": "n", "type": "INT64", "mode": "REQUIRED"},
    {"name": "code", "type": "STRING"},
    {"name": "payload", "type": "STRING"}])"));
}

inline absl::StatusOr<std::optional<nlohmann::json>> BigQueryBenchRow(const std::int64_t& n) {
  static const std::string payload(64, 'p');
  return std::optional<nlohmann::json>(
      nlohmann::json{{"n", n}, {"code", "c" + std::to_string(n % 97)}, {"payload", payload}});
}

inline bigquery::BigQuerySerializationSchema<std::int64_t> BigQueryBenchSerializer() {
  auto s = bigquery::BigQuerySerializationSchema<std::int64_t>::json(BigQueryBenchSchema(),
                                                                     BigQueryBenchRow);
  if (!s.ok()) std::exit(1);
  return *s;
}

}  // namespace gcpstream::bench

#endif  // GCPSTREAM_BENCH_BIGQUERY_BENCH_ROWS_H_
