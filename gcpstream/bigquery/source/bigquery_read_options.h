#ifndef GCPSTREAM_BIGQUERY_SOURCE_BIGQUERY_READ_OPTIONS_H_
#define GCPSTREAM_BIGQUERY_SOURCE_BIGQUERY_READ_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace gcpstream::bigquery {

// What the read session asks for and how its streams are read (BigQuerySource's options; the
// names follow the spec's BigQuerySource.builder()).
struct BigQueryReadOptions {
  // projects/P/datasets/D/tables/T — the table read.
  std::string table;
  // The project the session belongs to and is billed to [the table's].
  std::string parent_project;
  // The columns read, as top-level or dotted nested names [every column]. BigQuery applies the
  // projection when the session is created: the rest is neither sent nor metered.
  std::vector<std::string> selected_fields;
  // A BigQuery filter expression (a WHERE clause without the keyword) [none].
  std::string row_restriction;
  // Read the table as of this instant, inside BigQuery's time-travel window (7 days by default;
  // an older instant fails the session's creation with INVALID_ARGUMENT) [now].
  std::optional<absl::Time> snapshot_time;
  // A cap on the session's streams, never a floor [0: BigQuery decides].
  int max_stream_count = 0;
  // A best-effort request for at least this many streams; at most max_stream_count when both
  // are set [0: no request].
  int preferred_min_stream_count = 0;
  // The most rows one fetch hands to the task thread, so a checkpoint can be taken inside a
  // response block [10,000].
  int max_records_per_fetch = 10000;
  // Consecutive ReadRows attempts on a stream that delivered no row before the read fails; an
  // attempt that delivered rows resets the count [25].
  int retry_max_attempts = 25;
  // The first wait before a retried UNAVAILABLE ReadRows; it grows by 1.3 up to 60 s and each
  // wait is drawn uniformly below it, as the read client libraries do [100 ms]. The transport
  // faults reported as INTERNAL (RST_STREAM and its neighbours) are retried after 1 ms.
  std::chrono::milliseconds initial_retry_delay{100};
  // A ReadRows stream that delivers nothing for this long while the reader waits on it is
  // cancelled and resumed at its offset, as a retry without progress [60 s].
  std::chrono::milliseconds stall_timeout{std::chrono::seconds(60)};

  // INVALID_ARGUMENT naming the option: a table that is not projects/P/datasets/D/tables/T,
  // a negative stream count, preferred_min_stream_count above max_stream_count (BigQuery
  // refuses it too), max_records_per_fetch or retry_max_attempts below 1, an empty or repeated
  // selected field, a restriction over 1 MiB.
  absl::Status validate() const;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SOURCE_BIGQUERY_READ_OPTIONS_H_
