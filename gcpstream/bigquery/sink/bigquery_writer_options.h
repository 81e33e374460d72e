#ifndef GCPSTREAM_BIGQUERY_SINK_BIGQUERY_WRITER_OPTIONS_H_
#define GCPSTREAM_BIGQUERY_SINK_BIGQUERY_WRITER_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gcpstream/bigquery/admin/table_admin_factory.h"
#include "gcpstream/bigquery/schema/table_schema.h"
#include "gcpstream/connector/recovery_backoff.h"

namespace gcpstream::bigquery {

// Which write path the sink takes (../shared/reference/options-bigquery.md, writeMethod).
// FILE_LOADS is not built yet: build() refuses it.
enum class WriteMethod { kStorageApiAtLeastOnce, kStorageApiExactlyOnce, kFileLoads };

enum class CreateDisposition { kCreateIfNeeded, kCreateNever };

// How a table the sink creates is laid out (TableCreateOptions). Applied only at creation:
// an existing table is never changed. JSON in the v2 REST shapes.
struct TableCreateOptions {
  nlohmann::json time_partitioning;            // {"type": "DAY", "field": "..."}; null: none
  std::vector<std::string> clustering_fields;  // at most 4 top-level columns
  std::string description;

  // INVALID_ARGUMENT unless every clustering column (at most 4, no repeats) and the
  // partitioning column are top-level columns of `schema`, the latter DATE, TIMESTAMP or
  // DATETIME, and the partitioning type is DAY, HOUR, MONTH or YEAR.
  absl::Status validate(const TableSchema& schema) const;
  // The tables resource a table of `schema` is created with (schema, timePartitioning,
  // clustering, description), for tables.insert.
  nlohmann::json resource(const TableSchema& schema) const;
};

// INVALID_ARGUMENT unless `id` is a BigQuery table id: letters, digits, underscores, dashes and
// spaces, 1 to 1,024 bytes (https://cloud.google.com/bigquery/docs/tables#table_naming).
absl::Status ValidateTableId(const std::string& id);

// Tuning of the STORAGE_API_AT_LEAST_ONCE writer (DefaultStreamOptions) and the shared writer
// caps. Defaults are the reference's.
struct BigQueryWriterOptions {
  // Serialized-row bytes buffered per destination before an append is issued.
  std::int64_t max_append_request_bytes = 512 * 1024;
  // In-stream retries of a failed append (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, INTERNAL,
  // RESOURCE_EXHAUSTED, UNKNOWN, a connection that ended before answering): the delay starts
  // at `retry_initial_delay` and grows by `retry_delay_multiplier` up to `retry_max_delay`,
  // for at most `retry_max_attempts` attempts in all, within `max_retry_duration`. What still
  // fails fails the job (never a failure handler: an outage is not a bad row).
  std::chrono::milliseconds retry_initial_delay{500};
  double retry_delay_multiplier = 2.0;
  std::chrono::milliseconds retry_max_delay{30000};
  int retry_max_attempts = 5;
  std::chrono::milliseconds max_retry_duration{std::chrono::minutes(5)};
  // An append unanswered this long ends its connection (then it is retried like an outage):
  // the watchdog the Java client library keeps (5 minutes).
  std::chrono::milliseconds append_answer_timeout{std::chrono::minutes(5)};
  // The connector's own schedule for table creation and re-appends after it
  // (recoveryInitialBackoff 500 ms, recoveryMaxBackoff 10 s, recoveryMaxAttempts 10, ±25 %).
  connector::RecoveryOptions recovery;
  // Append requests in flight per destination connection (maxInflightRequests: 100, not the
  // Java SDK's 1,000) and their bytes (maxInflightBytes: 100 MiB).
  int max_inflight_requests = 100;
  std::int64_t max_inflight_bytes = 100LL * 1024 * 1024;
  // The shared writer caps: unacknowledged rows and bytes per subtask. The bytes cap is the
  // memory bound; the rows cap is high enough not to stop a 512 KiB request of small rows from
  // filling (measured in bench/bigquery_write: 1,000 rows let one request fly at a time, at 42 %
  // of a raw AppendRows loop's rate).
  std::int64_t max_in_flight_rows = 500000;
  std::int64_t max_in_flight_bytes = 64LL * 1024 * 1024;
  std::chrono::milliseconds destination_idle_timeout{std::chrono::hours(1)};
  // flushInterval: every this long what is batched is appended, whatever the thresholds
  // (STORAGE_API_AT_LEAST_ONCE without checkpointing: bounds how long a row waits in a batch;
  // a mitigation, not the guarantee). 0 (the default): off.
  std::chrono::milliseconds flush_interval{0};
  bool per_destination_metrics = false;
  std::chrono::milliseconds shutdown_timeout{std::chrono::seconds(30)};
  std::chrono::milliseconds stall_warning_interval{std::chrono::seconds(60)};
  int max_consecutive_rejections = 100;

  // INVALID_ARGUMENT naming the option.
  absl::Status validate() const;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_BIGQUERY_WRITER_OPTIONS_H_
