#ifndef GCPSTREAM_BIGQUERY_SOURCE_READ_SESSION_ENUMERATOR_H_
#define GCPSTREAM_BIGQUERY_SOURCE_READ_SESSION_ENUMERATOR_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gcpstream/api/pull_split_assigner.h"
#include "gcpstream/api/split_enumerator.h"
#include "gcpstream/bigquery/admin/table_admin.h"
#include "gcpstream/bigquery/client/read_stub.h"
#include "gcpstream/bigquery/source/bigquery_read_options.h"
#include "gcpstream/bigquery/source/query_job.h"
#include "gcpstream/bigquery/source/read_stream_split.h"

namespace gcpstream::bigquery {

// The CreateReadSession request the options describe (Avro rows).
storage_v1::CreateReadSessionRequest MakeReadSessionRequest(const BigQueryReadOptions& options);

// What a session is asked for besides its table, as text ("selected_fields=[a, b]
// row_restriction=\"x > 1\" snapshot_time=..."): a restore compares it, since the restored
// streams keep reading what the first session was asked for.
std::string DescribeReadSession(const BigQueryReadOptions& options);

// Creates the read session (UNAVAILABLE and DEADLINE_EXCEEDED are tried again, 5 attempts in
// all, 60 s each, unless `cancelled` turns true between them: CANCELLED) and returns one split
// per stream at offset 0. A view's refusal gets a sentence saying why; every failure keeps its
// code. Blocking.
absl::StatusOr<std::vector<ReadStreamSplit>> CreateReadSession(
    BigQueryReadStub& stub, const BigQueryReadOptions& options, std::string* session_name,
    const std::atomic<bool>* cancelled = nullptr);

// On the query route it first runs the query job (RunQueryJob: once, from this planning call)
// and reads its result table. The job is checkpointed from the moment it is submitted, so a
// restore before the session exists waits for that job, and one after adopts the session (the
// restored state's table is then the result's): the query never runs twice. `admin` is needed
// there only.
// Creates the read session exactly once, on a worker thread, and hands its streams out one per
// split request (pull-based: a reader that finishes a small stream comes back for another). A
// restored enumerator adopts the checkpointed session and never creates a second one — that
// would pin a second snapshot of the table. A failed creation fails the job. A restore whose
// session read another table, or was asked for other columns, restriction or snapshot than the
// source now asks for, is refused naming both (its streams would read what the first asked).
// Metrics on the coordinator's group: readSessionsCreated (1 fresh, 0 restored),
// queryJobsSubmitted (query jobs created, 0 for a table source or a restore) and
// queryJobsReattached (earlier attempts' jobs adopted under the reuse window), splitsAssigned,
// splitsReturned, unassignedSplits.
class ReadSessionEnumerator final : public SplitEnumerator<ReadStreamSplit, BigQueryReadEnumState> {
 public:
  ReadSessionEnumerator(SplitEnumeratorContext<ReadStreamSplit>& context,
                        BigQueryReadStubFactory stubs, BigQueryReadOptions options,
                        std::shared_ptr<const TableAdmin> admin = nullptr,
                        BigQueryReadEnumState restored = {});

  absl::Status start() override;
  absl::Status handle_split_request(int subtask) override;
  absl::Status add_splits_back(std::vector<ReadStreamSplit> splits, int subtask) override;
  absl::Status add_reader(int subtask) override;
  absl::StatusOr<BigQueryReadEnumState> snapshot_state(std::int64_t checkpoint_id) override;
  // Stops a session creation that is retrying (the job is stopping).
  absl::Status close() override;

 private:
  struct Created {
    std::string session;
    std::string table;  // the table read: the source's, or the query result's
    QueryJobOutcome query;
    std::vector<ReadStreamSplit> splits;
  };
  void on_created(absl::StatusOr<Created> created);

  // The query job of a plan under way, shared with the worker that submits it.
  struct Submitted {
    std::mutex mu;
    std::string job;  // QueryJobRef, or empty
    int count = 0;    // jobs created by this plan
  };

  SplitEnumeratorContext<ReadStreamSplit>& context_;
  BigQueryReadStubFactory stubs_;
  const BigQueryReadOptions options_;
  std::shared_ptr<const TableAdmin> admin_;
  BigQueryReadEnumState state_;
  PullSplitAssigner<ReadStreamSplit> assigner_;
  Counter& sessions_created_;
  Counter& queries_submitted_;
  Counter& queries_reattached_;
  std::shared_ptr<std::atomic<bool>> closed_ = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<Submitted> submitted_;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SOURCE_READ_SESSION_ENUMERATOR_H_
