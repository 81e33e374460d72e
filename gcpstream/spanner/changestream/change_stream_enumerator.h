#ifndef GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_ENUMERATOR_H_
#define GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_ENUMERATOR_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "gcpstream/api/split_enumerator.h"
#include "gcpstream/spanner/changestream/change_stream_ledger.h"
#include "gcpstream/spanner/changestream/change_stream_metadata.h"
#include "gcpstream/spanner/changestream/change_stream_options.h"
#include "gcpstream/spanner/changestream/change_stream_split.h"
#include "gcpstream/spanner/source/spanner_read_client.h"

namespace gcpstream::spanner {

// The coordinator of SpannerChangeStreamSource. At start it reads the stream's metadata on a
// worker thread (dialect, scope, retention, value capture type, partition mode; logged, and an
// explicit column list warned about). Fresh, it resolves the start position and schedules the
// initial (null-token) query; restored, it checks the oldest restored position against the
// retention (failing the job, or replacing the whole ledger with resume_fallback). Only then,
// and once every reader said which splits it restored, it releases the readers — no restored
// query reaches Spanner before the check. Partitions go to readers that asked (one per free
// query slot); children are scheduled once every parent they name has finished. The source
// watermark is the ledger's lowest position less 1 ms, broadcast to every reader, never moving
// back. Metrics on the coordinator's group: changeStreamPartitionLedgerSize,
// unassignedChangeStreamPartitions, waitingChangeStreamPartitions, finishedParentProofs,
// unassignedPartitionLagMs, splitsAssigned.
class ChangeStreamEnumerator final
    : public SplitEnumerator<ChangeStreamPartitionSplit, ChangeStreamEnumState> {
 public:
  using Clock = std::function<absl::Time()>;
  ChangeStreamEnumerator(SplitEnumeratorContext<ChangeStreamPartitionSplit>& context,
                         SpannerReadClientFactory clients, std::string stream,
                         SpannerChangeStreamOptions options,
                         std::optional<ChangeStreamEnumState> restored, Clock now = nullptr);
  ~ChangeStreamEnumerator() override;

  absl::Status start() override;
  absl::Status handle_split_request(int subtask) override;
  absl::Status add_splits_back(std::vector<ChangeStreamPartitionSplit> splits,
                               int subtask) override;
  absl::Status add_reader(int subtask) override;
  absl::StatusOr<ChangeStreamEnumState> snapshot_state(std::int64_t checkpoint_id) override;
  absl::Status handle_source_event(int subtask, std::shared_ptr<const SourceEvent> event) override;

  // For tests.
  const ChangeStreamLedger& ledger() const { return ledger_; }
  bool released() const { return released_; }

 private:
  void on_metadata(absl::StatusOr<ChangeStreamMetadata> metadata);
  void maybe_release();
  void serve();
  void broadcast_watermark();
  void update_gauges();

  SplitEnumeratorContext<ChangeStreamPartitionSplit>& context_;
  SpannerReadClientFactory clients_;
  const std::string stream_;
  const SpannerChangeStreamOptions options_;
  const bool restored_;
  Clock now_;
  ChangeStreamLedger ledger_;
  std::optional<ChangeStreamMetadata> metadata_;
  bool discard_held_ = false;
  bool released_ = false;
  std::map<int, std::vector<ChangeStreamPartitionSplit>> hello_;
  std::map<int, int> requests_;  // free query slots each reader asked to fill
  std::int64_t emitted_watermark_ms_;
  Counter* assigned_ = nullptr;
  struct Gauges {
    std::atomic<double> ledger{0}, unassigned{0}, waiting{0}, proofs{0}, oldest_unassigned_ms{0};
  };
  std::shared_ptr<Gauges> gauges_ = std::make_shared<Gauges>();
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_ENUMERATOR_H_
