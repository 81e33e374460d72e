#ifndef GCPSTREAM_BIGQUERY_SINK_BUFFERED_STREAM_COMMITTER_H_
#define GCPSTREAM_BIGQUERY_SINK_BUFFERED_STREAM_COMMITTER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "gcpstream/api/metrics.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/bigquery/client/write_stub.h"
#include "gcpstream/bigquery/sink/buffered_stream_ledger.h"
#include "gcpstream/connector/recovery_backoff.h"

namespace gcpstream::bigquery {

// The exactly-once sink's committer: after a checkpoint completed, FlushRows makes each
// committable's rows visible (every row of its stream below its offset). Committables of one
// stream are folded into one flush at the highest offset. FlushRows is idempotent: flushing an
// offset already flushed succeeds (the service answers OK or ALREADY_EXISTS), so a restored
// job simply commits its restored committables again.
//
// Retried inside commit() on the recovery schedule (500 ms doubling to 10 s, 10 attempts,
// ±25 %): transient codes, and — under CREATE_IF_NEEDED, where the writer may have created the
// table moments ago — the NOT_FOUND / masked PERMISSION_DENIED of a table whose metadata is
// still propagating. What is left fails the job (signal_failed_*; the restart commits the
// restored committables again): OFFSET_OUT_OF_RANGE (the stream lost rows it acknowledged),
// STREAM_FINALIZED, STREAM_NOT_FOUND (the stream expired: its 7-day TTL without traffic), a
// denial. Runs on the subtask thread and blocks it while retrying (at most the schedule's sum,
// about a minute, per stream). Metrics: totalCommittables, successfulCommittables,
// failedCommittables, flushRowsCalls, flushRowsRetries.
class BufferedStreamCommitter final : public Committer<BufferedStreamPosition> {
 public:
  BufferedStreamCommitter(std::shared_ptr<BigQueryWriteStub> stub,
                          connector::RecoveryOptions recovery, bool create_if_needed,
                          MetricGroup& metrics, std::chrono::milliseconds call_timeout);

  absl::Status commit(std::vector<CommitRequest<BufferedStreamPosition>>& requests) override;

 private:
  // OK when rows [0, offset) of `stream` are visible.
  absl::Status flush(const BufferedStreamPosition& position);

  std::shared_ptr<BigQueryWriteStub> stub_;
  connector::RecoveryOptions recovery_;
  bool create_if_needed_;
  std::chrono::milliseconds call_timeout_;
  Counter& total_;
  Counter& successful_;
  Counter& failed_;
  Counter& calls_;
  Counter& retries_;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_BUFFERED_STREAM_COMMITTER_H_
