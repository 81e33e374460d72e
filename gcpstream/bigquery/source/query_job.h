#ifndef GCPSTREAM_BIGQUERY_SOURCE_QUERY_JOB_H_
#define GCPSTREAM_BIGQUERY_SOURCE_QUERY_JOB_H_

#include <atomic>
#include <chrono>
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
};

struct QueryJobOutcome {
  std::string job_id;
  std::string result_table;  // projects/P/datasets/D/tables/T the read session reads
  int submitted = 0;         // query jobs this run created (a probe past a failed one adds one)
  bool reattached = false;   // an earlier attempt's finished or running job was adopted
};

// The reusable job id: "gcpstream_query_" + 16 hex digits of SHA-256 over the job name, the
// query, the project, the location, the result dataset and the window, so only identical jobs
// share it; a retry past a failed or vanished attempt appends "_r<n>".
std::string ReusableQueryJobId(const QueryJobSpec& spec);

// Runs the query and waits for it, returning where its result is. Blocking; `cancelled` (may be
// null) stops the waits with CANCELLED.
//  - Without reuse: a random id. A transient failure of jobs.insert (UNAVAILABLE,
//    DEADLINE_EXCEEDED, INTERNAL, RESOURCE_EXHAUSTED other than quotaExceeded) is retried with
//    the same id, and a 409 after such a retry is this run's own job.
//  - With reuse: ReusableQueryJobId, then its retries. A 409 fetches the job (with `location`):
//    one created before the window began, one that failed, or one whose result table is gone
//    (tables.get NOT_FOUND) is probed past to the next retry id; one still running is waited
//    for; a finished one with its table is adopted (reattached). At most 100 ids are probed.
//  - With result_dataset the result goes to table "gcpstream_result_<job id>" there
//    (WRITE_TRUNCATE, CREATE_IF_NEEDED) and is patched to expire 24 h later; a failed patch
//    only warns.
// A job that ends with an errorResult fails with its reason and message (INVALID_ARGUMENT for
// invalidQuery, NOT_FOUND for notFound, ...), naming the job id. `now` is the clock the window
// is measured on (absl::Now by default).
absl::StatusOr<QueryJobOutcome> RunQueryJob(const TableAdmin& admin, const QueryJobSpec& spec,
                                            const std::atomic<bool>* cancelled = nullptr,
                                            std::function<absl::Time()> now = nullptr);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SOURCE_QUERY_JOB_H_
