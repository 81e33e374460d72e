#ifndef GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_ENUMERATOR_H_
#define GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_ENUMERATOR_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "gcpstream/api/split_enumerator.h"
#include "gcpstream/bigtable/changestream/change_stream_ledger.h"
#include "gcpstream/bigtable/changestream/change_stream_options.h"
#include "gcpstream/bigtable/changestream/change_stream_split.h"
#include "gcpstream/bigtable/changestream/change_stream_stream_reader.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"

namespace gcpstream::bigtable {

using BigtableAdminStubFactory = std::function<absl::StatusOr<
    std::shared_ptr<google::bigtable::admin::v2::BigtableTableAdmin::StubInterface>>()>;

// Lets the coordinator's close() cancel its blocking metadata calls and their retry waits, so a
// hung service never holds a cancelled job. Thread-safe.
class CallCanceller {
 public:
  // Registers the call about to run; false when already cancelled.
  bool enter(grpc::ClientContext& context);
  void leave();
  void cancel();
  // Waits `d` unless cancelled first; false when cancelled.
  bool sleep(std::chrono::milliseconds d);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  grpc::ClientContext* context_ = nullptr;
  bool cancelled_ = false;
};

// The change stream retention of a table (GetTable, Table.change_stream_config).
// FAILED_PRECONDITION when the table has no change stream; the call's code otherwise.
absl::StatusOr<absl::Duration> ReadChangeStreamRetention(
    google::bigtable::admin::v2::BigtableTableAdmin::StubInterface& admin,
    const std::string& table_name, CallCanceller* canceller = nullptr);

// Lists a table's current change-stream partitions (GenerateInitialChangeStreamPartitions).
absl::StatusOr<std::vector<RowKeyRange>> ListChangeStreamPartitions(
    google::bigtable::v2::Bigtable::StubInterface& stub, const std::string& table_name,
    const std::string& app_profile_id, CallCanceller* canceller = nullptr);

// The coordinator of BigtableChangeStreamSource. On a worker thread it reads the table's change
// stream retention (failing the job when change streams are not enabled) and, fresh, lists the
// initial partitions, each started at the start position (transient failures of either call are
// tried 5 times over about 4 s; close() cancels them); restored, it takes the checkpointed
// ledger. Once every reader said which splits it restored, it reconciles (ChangeStreamLedger::
// reconcile) and, restored, checks every position against the retention (less a one-minute
// margin): an expired one fails the job with FAILED_PRECONDITION unless resume_fallback is set,
// which restarts the expired partitions and tokens there without their tokens (a WARN says what
// is skipped). Only then are the readers released, so no restored stream opens before. Every ready
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
                                 BigtableStubFactory stubs, BigtableAdminStubFactory admin,
                                 ChangeStreamRequestBase request,
                                 BigtableChangeStreamOptions options,
                                 std::optional<BigtableChangeStreamEnumState> restored,
                                 Clock now = nullptr);

  absl::Status start() override;
  absl::Status handle_split_request(int subtask) override;
  absl::Status add_splits_back(std::vector<BigtableChangeStreamSplit> splits, int subtask) override;
  absl::Status add_reader(int subtask) override;
  absl::StatusOr<BigtableChangeStreamEnumState> snapshot_state(std::int64_t checkpoint_id) override;
  absl::Status handle_source_event(int subtask, std::shared_ptr<const SourceEvent> event) override;
  absl::Status close() override;

  const ChangeStreamLedger& ledger() const { return ledger_; }
  bool released() const { return released_; }

 private:
  struct Metadata {
    absl::Duration retention;
    std::vector<RowKeyRange> partitions;  // fresh only
  };
  void on_metadata(absl::StatusOr<Metadata> metadata);
  // Restored: applies the retention check; false when it failed the job.
  bool check_retention(std::set<std::string>& drop);
  void maybe_release();
  void serve();
  void maybe_finish();
  void update_gauges();

  SplitEnumeratorContext<BigtableChangeStreamSplit>& context_;
  BigtableStubFactory stubs_;
  BigtableAdminStubFactory admin_;
  std::shared_ptr<CallCanceller> canceller_ = std::make_shared<CallCanceller>();
  const ChangeStreamRequestBase request_;
  const BigtableChangeStreamOptions options_;
  Clock now_;
  ChangeStreamLedger ledger_;
  bool started_ = false;
  const bool restored_;
  std::optional<absl::Duration> retention_;
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
