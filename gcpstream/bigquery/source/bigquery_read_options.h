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
  // projects/P/datasets/D/tables/T — the table read. Empty on the query route, where the
  // enumerator fills in the table the query's result landed in.
  std::string table;
  // The query route, instead of `table`: this GoogleSQL query runs once as a query job (from the
  // enumerator, before the session is created; a restore never runs it again) and the session
  // reads its result. Billed twice: the bytes the query scans, then the bytes the session reads.
  std::string query;
  // The table route only: ask BigQuery once, when the read is planned, what `table` is (one
  // tables.get); a view, logical or materialized, which the Storage Read API cannot read, is
  // then read through the query job `SELECT <selected_fields> FROM view` (the query route's
  // machinery and options: query_location, query_result_dataset, reuse_query_result_within;
  // billed as a query); an ordinary table is read directly [off: no REST call at all].
  bool materialize_views = false;
  // The location the query job runs in [BigQuery infers it from the tables the query names].
  std::string query_location;
  // A dataset of parent_project the result lands in, as table gcpstream_result_<job id>, expiring
  // after 24 h [BigQuery's anonymous dataset: no storage charge, readable only by the identity
  // that ran the query].
  std::string query_result_dataset;
  // Attempts of the same job_name and query configuration inside this window share one query
  // job, so a re-plan before the first checkpoint does not bill the query again [0: off]. At most
  // 24 h (both places a result lands expire after about a day); needs query_location, because
  // BigQuery finds a job outside the US multi-region only with its location.
  std::chrono::milliseconds reuse_query_result_within{0};
  // The pipeline's name, part of the reusable query job id (needed with the window).
  std::string job_name;
  // Polls of a running query job back off from the first to the second [1 s, 30 s].
  std::chrono::milliseconds query_poll_initial{1000};
  std::chrono::milliseconds query_poll_max{30000};
  // The project the session belongs to and is billed to [the table's]. Required with `query`,
  // which names no table to take it from, and whose job is billed to it too.
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

  // INVALID_ARGUMENT naming the option: neither or both of table and query; a table that is not
  // projects/P/datasets/D/tables/T; on the query route, no parent_project, a snapshot_time (the
  // result table has no earlier version: put FOR SYSTEM_TIME AS OF in the query), a window
  // without query_location or job_name or outside (0, 24 h], a result dataset that is not a
  // dataset id, a query over 1 MiB; the query options without a query or materialize_views;
  // materialize_views with a query or a snapshot_time (a view's result has no earlier version);
  // a negative stream count, preferred_min_stream_count above max_stream_count (BigQuery
  // refuses it too), max_records_per_fetch or retry_max_attempts below 1, an empty or repeated
  // selected field, a restriction over 1 MiB.
  absl::Status validate() const;

 private:
  absl::Status validate_query() const;
  // The options of the query job itself (result dataset, location, reuse window).
  absl::Status validate_query_job() const;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SOURCE_BIGQUERY_READ_OPTIONS_H_
