#ifndef GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_ENUMERATOR_H_
#define GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_ENUMERATOR_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "gcpstream/api/split_enumerator.h"
#include "gcpstream/bigtable/changestream/change_stream_ledger.h"
#include "gcpstream/bigtable/changestream/change_stream_options.h"
#include "gcpstream/bigtable/changestream/change_stream_split.h"
#include "gcpstream/bigtable/changestream/change_stream_stream_reader.h"

namespace gcpstream::bigtable {

// Lists a table's current change-stream partitions (GenerateInitialChangeStreamPartitions).
absl::StatusOr<std::vector<RowKeyRange>> ListChangeStreamPartitions(
    google::bigtable::v2::Bigtable::StubInterface& stub, const std::string& table_name,
    const std::string& app_profile_id);

// The coordinator of BigtableChangeStreamSource. Fresh, it lists the initial partitions on a
// worker thread and starts each at the start position; restored, it takes the checkpointed
// ledger. Once every reader said which splits it restored, it reconciles (ChangeStreamLedger::
// reconcile) and releases the readers, so no restored stream opens before that. Every ready
// partition is assigned at once to the reader holding the fewest (readers queue what exceeds
// their stream slots and rotate through it). A CloseStream's tokens go to the successor
// partitions, each released once its tokens cover it. With an end time, once no partition is
// left every reader is told there are no more splits. Metrics on the coordinator's group:
// splitsAssigned, splitsReturned, unassignedSplits, changeStreamPartitionsDiscovered,
// changeStreamPartitionSplits, changeStreamPartitionMerges,
// unassignedChangeStreamPartitionLagMillis.
class BigtableChangeStreamEnumerator final
    : public SplitEnumerator<BigtableChangeStreamSplit, BigtableChangeStreamEnumState> {
 public:
  using Clock = std::function<absl::Time()>;
  BigtableChangeStreamEnumerator(SplitEnumeratorContext<BigtableChangeStreamSplit>& context,
                                 BigtableStubFactory stubs, ChangeStreamRequestBase request,
                                 BigtableChangeStreamOptions options,
                                 std::optional<BigtableChangeStreamEnumState> restored,
                                 Clock now = nullptr);

  absl::Status start() override;
  absl::Status handle_split_request(int subtask) override;
  absl::Status add_splits_back(std::vector<BigtableChangeStreamSplit> splits, int subtask) override;
  absl::Status add_reader(int subtask) override;
  absl::StatusOr<BigtableChangeStreamEnumState> snapshot_state(std::int64_t checkpoint_id) override;
  absl::Status handle_source_event(int subtask, std::shared_ptr<const SourceEvent> event) override;

  const ChangeStreamLedger& ledger() const { return ledger_; }
  bool released() const { return released_; }

 private:
  void on_partitions(absl::StatusOr<std::vector<RowKeyRange>> partitions);
  void maybe_release();
  void serve();
  void maybe_finish();
  void update_gauges();

  SplitEnumeratorContext<BigtableChangeStreamSplit>& context_;
  BigtableStubFactory stubs_;
  const ChangeStreamRequestBase request_;
  const BigtableChangeStreamOptions options_;
  Clock now_;
  ChangeStreamLedger ledger_;
  bool started_ = false;
  bool released_ = false;
  bool finished_ = false;
  std::map<int, std::vector<BigtableChangeStreamSplit>> hello_;
  Counter* assigned_ = nullptr;
  Counter* returned_ = nullptr;
  Counter* discovered_ = nullptr;
  Counter* splits_ = nullptr;
  Counter* merges_ = nullptr;
  struct Gauges {
    std::atomic<double> unassigned{0}, oldest_unassigned_ms{0};
  };
  std::shared_ptr<Gauges> gauges_ = std::make_shared<Gauges>();
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_ENUMERATOR_H_
