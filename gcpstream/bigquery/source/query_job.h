#ifndef GCPSTREAM_BIGQUERY_SOURCE_QUERY_JOB_H_
#define GCPSTREAM_BIGQUERY_SOURCE_QUERY_JOB_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gcpstream/bigquery/admin/table_admin.h"

namespace gcpstream::bigquery {

// The query job of a BigQuerySource on the query route (docs/bigquery.md, "Reading a query").
struct QueryJobSpec {
  std::string query;           // GoogleSQL (the job sets useLegacySql false)
  std::string project;         // where the job runs and is billed: the source's parent_project
  std::string location;        // jobReference.location; empty: BigQuery infers it
  std::string result_dataset;  // a dataset of `project`; empty: BigQuery's anonymous dataset
  // Attempts of the same job name and query configuration inside this window share one query
  // job [0: off, every plan runs the query under a random id]. At most 24 h; needs `location`.
  std::chrono::milliseconds reuse_within{0};
  std::string job_name;  // names the pipeline in the reusable id; needed with reuse_within
  // Polls of a running job back off from the first to the second (the sink's load job polls'
  // defaults, 1 s and 30 s).
  std::chrono::milliseconds poll_initial{1000};
  std::chrono::milliseconds poll_max{30000};
  // A job an earlier attempt submitted and checkpointed before its result was read
  // (QueryJobRef): waited for and read instead of running the query again [none].
  std::string resume_job;
};

// How a submitted job is kept in the enumerator's checkpoint: "ID" or "ID@LOCATION" (neither
// a job id nor a location has an '@'), and read back.
std::string QueryJobRef(const std::string& job_id, const std::string& location);
void ParseQueryJobRef(const std::string& ref, std::string* job_id, std::string* location);

struct QueryJobOutcome {
  std::string job_id;
  std::string location;      // where the job ran (as the service reported it)
  std::string result_table;  // projects/P/datasets/D/tables/T the read session reads
  bool reattached = false;   // an earlier attempt's finished or running job was adopted
};

// The reusable job id for window number `bucket` (Unix time in ms / window in ms):
// "gcpstream_query_" + 16 hex digits of SHA-256 over the job name, the query, the project, the
// location, the result dataset and the window, then "_" + the bucket. Only identical jobs share
// the digest; the bucket keeps ids from piling up over months of plans under one name (BigQuery
// keeps a job id taken for about six months). A retry past a failed or vanished attempt appends
// "_r<n>".
std::string ReusableQueryJobId(const QueryJobSpec& spec, std::int64_t bucket);

// Whether a failed REST call about a job or table is worth repeating: UNAVAILABLE,
// DEADLINE_EXCEEDED, INTERNAL, and RESOURCE_EXHAUSTED other than reason quotaExceeded (a rate
// limit passes; a quota lasts the day).
bool TransientRestFailure(const absl::Status& s);
// Sleeps `d` in slices of at most 100 ms; false as soon as `cancelled` (may be null) is set.
bool SleepUnlessCancelled(std::chrono::milliseconds d, const std::atomic<bool>* cancelled);

// Runs the query and waits for it, returning where its result is. Blocking; `cancelled` (may be
// null) is checked at least every 100 ms of every wait and stops it with CANCELLED (BigQuery
// still runs the query; an HTTP call already made runs to its 30 s timeout first).
// `on_submitted` (may be null) is told each query job created, with its location, as it is —
// also when the run then fails; it runs on the calling thread.
//  - With resume_job: that job is fetched and waited for, and its result read (reattached); its
//    failure fails the run (the query failed). Only when BigQuery no longer knows the job is the
//    query planned afresh, as below.
//  - Every jobs.get and tables.get names the job's location: the configured one, else the one
//    jobs.insert reported (outside the US and EU multi-regions a job is found only with it).
//  - jobs.insert that fails transiently (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL,
//    RESOURCE_EXHAUSTED other than quotaExceeded) is retried with the same id; a 409 after such a
//    retry is this run's own job when the job found runs the same query and was created after
//    this run began.
//  - Without reuse: a random id.
//  - With reuse: first the previous window's ids are looked up (jobs.get only), then the
//    current window's are submitted, each id and its retries in turn. A job created before
//    `reuse_within` ago, one that failed, or one whose result table is gone (tables.get
//    NOT_FOUND) is passed over; one still running is waited for; a finished one with its table
//    is adopted (reattached). At most 100 ids per window.
//  - With result_dataset the result goes to table "gcpstream_result_<job id>" there
//    (WRITE_TRUNCATE, CREATE_IF_NEEDED); a result table without an expiration (made by this run
//    or by an adopted attempt that never set one) is patched to expire 24 h later; a failed patch
//    only warns.
// A job that ends with an errorResult fails with the code its reason stands for
// (invalidQuery INVALID_ARGUMENT, notFound NOT_FOUND, accessDenied PERMISSION_DENIED, ...),
// naming the job id and the reason. A malformed answer is INTERNAL. `now` is the clock windows
// are measured on (absl::Now by default).
using QueryJobSubmitted =
    std::function<void(const std::string& job_id, const std::string& location)>;
absl::StatusOr<QueryJobOutcome> RunQueryJob(const TableAdmin& admin, const QueryJobSpec& spec,
                                            const std::atomic<bool>* cancelled = nullptr,
                                            QueryJobSubmitted on_submitted = nullptr,
                                            std::function<absl::Time()> now = nullptr);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SOURCE_QUERY_JOB_H_
