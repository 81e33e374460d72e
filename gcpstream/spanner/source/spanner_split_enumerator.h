#ifndef GCPSTREAM_SPANNER_SOURCE_SPANNER_SPLIT_ENUMERATOR_H_
#define GCPSTREAM_SPANNER_SOURCE_SPANNER_SPLIT_ENUMERATOR_H_

#include <deque>
#include <functional>
#include <memory>
#include <set>

#include "absl/time/time.h"
#include "gcpstream/api/split_enumerator.h"
#include "gcpstream/spanner/source/spanner_partition_split.h"
#include "gcpstream/spanner/source/spanner_read_client.h"
#include "gcpstream/spanner/source/spanner_read_operation.h"

namespace gcpstream::spanner {

// Opens the batch read-only transaction at `options.timestamp_bound` on a session of `client`
// that it keeps (the session is never given back: every reader rejoins the transaction on it),
// and asks Spanner to partition `op` in it (with the maxPartitions / partitionSizeBytes hints).
// Blocking. The service's refusal of a query that is not root-partitionable is returned with
// its code and its own message, which says what to change.
absl::StatusOr<SpannerSourceEnumState> PlanBatchRead(SpannerDataClient& client,
                                                     const SpannerReadOperation& op,
                                                     const SpannerSourceOptions& options);

// Whether a restored read can go on: FAILED_PRECONDITION naming the snapshot timestamp and the
// database's version_retention_period when the snapshot is older than the retention (its data
// is gone), or naming the session when the transaction's session no longer exists (Spanner
// deletes a session idle for an hour). Other failures keep their code. Blocking.
absl::Status CheckBatchReadRestorable(SpannerDataClient& client, const BatchTransactionRef& tx,
                                      absl::Time now);

// "1h", "7d", "90m", "3600s" (how Spanner reports version_retention_period) as a duration;
// INVALID_ARGUMENT otherwise.
absl::StatusOr<absl::Duration> ParseRetentionPeriod(std::string_view text);

// The error a read gets when its batch transaction's session is gone.
absl::Status LostBatchTransactionError(const BatchTransactionRef& tx, const absl::Status& cause);

// Plans the read once (on a worker thread) and hands out one partition per split request, so a
// subtask that finishes early takes the next partition. Restored, it does not plan again: it
// keeps the checkpointed transaction and partitions and first checks that the snapshot is still
// readable (CheckBatchReadRestorable), failing the job with that error otherwise. Metrics on the
// coordinator's group: partitionsPlanned (gauge), splitsAssigned, splitsReturned.
class SpannerSplitEnumerator final
    : public SplitEnumerator<SpannerPartitionSplit, SpannerSourceEnumState> {
 public:
  SpannerSplitEnumerator(SplitEnumeratorContext<SpannerPartitionSplit>& context,
                         SpannerReadClientFactory clients, SpannerReadOperation op,
                         SpannerSourceOptions options, SpannerSourceEnumState restored = {});
  ~SpannerSplitEnumerator() override;

  absl::Status start() override;
  absl::Status handle_split_request(int subtask) override;
  absl::Status add_splits_back(std::vector<SpannerPartitionSplit> splits, int subtask) override;
  absl::Status add_reader(int subtask) override;
  absl::StatusOr<SpannerSourceEnumState> snapshot_state(std::int64_t checkpoint_id) override;
  absl::Status close() override;

 private:
  void serve(int subtask);
  void on_ready(absl::StatusOr<SpannerSourceEnumState> planned);

  SplitEnumeratorContext<SpannerPartitionSplit>& context_;
  SpannerReadClientFactory clients_;
  const SpannerReadOperation op_;
  const SpannerSourceOptions options_;
  SpannerSourceEnumState state_;
  std::shared_ptr<SpannerReadClient> client_;
  std::deque<SpannerPartitionSplit> unassigned_;
  bool ready_ = false;
  std::set<int> waiting_;
  Counter* assigned_ = nullptr;
  Counter* returned_ = nullptr;
  std::shared_ptr<std::atomic<int>> planned_count_;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_SOURCE_SPANNER_SPLIT_ENUMERATOR_H_
