#ifndef GCPSTREAM_RUNTIME_SOURCE_COORDINATOR_H_
#define GCPSTREAM_RUNTIME_SOURCE_COORDINATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "gcpstream/util/absl_fmt.h"

#include "gcpstream/api/source.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/runtime/job_services.h"
#include "gcpstream/runtime/operator_state.h"

namespace gcpstream::runtime {

// The coordinator's handle on one reader subtask. Thread-safe: every call posts a mail to the
// reader's subtask (and is dropped if that subtask has ended).
template <typename SplitT>
class ReaderGateway {
 public:
  virtual ~ReaderGateway() = default;
  virtual void deliver_splits(std::vector<SplitT> splits) = 0;
  virtual void deliver_no_more_splits() = 0;
  virtual void deliver_event(std::shared_ptr<const SourceEvent> event) = 0;
};

// What the job (and the checkpoint coordinator) needs from any source's coordinator. Every
// method runs on the coordinator thread.
class SourceCoordinatorBase {
 public:
  virtual ~SourceCoordinatorBase() = default;
  virtual const std::string& uid() const = 0;
  // Creates the enumerator (restoring it when `restored` holds its state) and starts it.
  virtual absl::Status start(const OperatorStateReader* restored) = 0;
  virtual absl::Status snapshot(std::int64_t checkpoint_id, OperatorStateWriter& state) = 0;
  virtual void notify_checkpoint_complete(std::int64_t checkpoint_id) = 0;
  virtual void notify_checkpoint_aborted(std::int64_t checkpoint_id) = 0;
  virtual void close() = 0;
};

inline constexpr char kEnumeratorStateList[] = "enumerator-state";

// Runs a source's SplitEnumerator and is its SplitEnumeratorContext.
template <typename T, typename SplitT, typename EnumT>
class SourceCoordinator final : public SourceCoordinatorBase,
                                public SplitEnumeratorContext<SplitT> {
 public:
  using SourceT = Source<T, SplitT, EnumT>;

  SourceCoordinator(std::string name, std::string uid, std::shared_ptr<const SourceT> source,
                    int parallelism, JobServices& services, MetricGroup& metrics)
      : name_(std::move(name)),
        uid_(std::move(uid)),
        source_(std::move(source)),
        parallelism_(parallelism),
        services_(services),
        metrics_(metrics) {}

  const std::string& uid() const override { return uid_; }

  absl::Status start(const OperatorStateReader* restored) override {
    if (restored != nullptr && !restored->list(kEnumeratorStateList).empty()) {
      const auto& elements = restored->list(kEnumeratorStateList);
      if (elements.size() != 1) {
        return absl::FailedPreconditionError(fmt::format(
            "source '{}': expected one enumerator state in the checkpoint, found {}", name_,
            elements.size()));
      }
      GCP_ASSIGN_OR_RETURN(EnumT state, source_->enumerator_state_serializer().deserialize(
                                            elements[0].version, elements[0].bytes));
      GCP_ASSIGN_OR_RETURN(enumerator_, source_->restore_enumerator(*this, std::move(state)));
    } else {
      GCP_ASSIGN_OR_RETURN(enumerator_, source_->create_enumerator(*this));
    }
    GCP_RETURN_IF_ERROR(enumerator_->start());
    started_ = true;
    // Readers that registered before the enumerator existed.
    for (const auto& [subtask, gateway] : readers_) {
      GCP_RETURN_IF_ERROR(enumerator_->add_reader(subtask));
    }
    return absl::OkStatus();
  }

  absl::Status snapshot(std::int64_t checkpoint_id, OperatorStateWriter& state) override {
    if (!enumerator_) return absl::FailedPreconditionError("enumerator not started");
    GCP_ASSIGN_OR_RETURN(EnumT snapshot, enumerator_->snapshot_state(checkpoint_id));
    const auto& serializer = source_->enumerator_state_serializer();
    GCP_ASSIGN_OR_RETURN(std::string bytes, serializer.serialize(snapshot));
    state.add(kEnumeratorStateList, serializer.version(), std::move(bytes));
    // Assignments made before this snapshot belong to checkpoint `checkpoint_id` now.
    auto& slot = assignments_by_checkpoint_[checkpoint_id];
    for (auto& [subtask, splits] : uncheckpointed_) {
      for (auto& split : splits) slot[subtask].push_back(std::move(split));
    }
    uncheckpointed_.clear();
    return absl::OkStatus();
  }

  void notify_checkpoint_complete(std::int64_t checkpoint_id) override {
    // Those assignments are in the readers' completed state now: forget them.
    assignments_by_checkpoint_.erase(assignments_by_checkpoint_.begin(),
                                     assignments_by_checkpoint_.upper_bound(checkpoint_id));
    if (enumerator_) check(enumerator_->notify_checkpoint_complete(checkpoint_id));
  }
  void notify_checkpoint_aborted(std::int64_t checkpoint_id) override {
    if (enumerator_) check(enumerator_->notify_checkpoint_aborted(checkpoint_id));
  }
  void close() override {
    if (enumerator_) {
      absl::Status s = enumerator_->close();
      enumerator_.reset();
      (void)s;  // closing after the job ended: nothing left to fail
    }
    readers_.clear();
  }

  // --- Called (as coordinator tasks) by the reader subtasks ---
  void register_reader(int subtask, std::shared_ptr<ReaderGateway<SplitT>> gateway) {
    readers_[subtask] = std::move(gateway);
    if (started_) check(enumerator_->add_reader(subtask));
  }
  void unregister_reader(int subtask) { readers_.erase(subtask); }
  // A reader failed on its own (not as part of a whole-job restore): the splits assigned to it
  // after the last completed checkpoint are not in any state that will be restored, so they go
  // back to the enumerator (SplitEnumerator::add_splits_back).
  void subtask_failed(int subtask) {
    readers_.erase(subtask);
    std::vector<SplitT> back;
    for (auto& [id, by_subtask] : assignments_by_checkpoint_) {
      auto it = by_subtask.find(subtask);
      if (it == by_subtask.end()) continue;
      for (auto& split : it->second) back.push_back(std::move(split));
      by_subtask.erase(it);
    }
    if (auto it = uncheckpointed_.find(subtask); it != uncheckpointed_.end()) {
      for (auto& split : it->second) back.push_back(std::move(split));
      uncheckpointed_.erase(it);
    }
    if (!back.empty() && enumerator_) {
      check(enumerator_->add_splits_back(std::move(back), subtask));
    }
  }
  void handle_split_request(int subtask) {
    if (started_) check(enumerator_->handle_split_request(subtask));
  }
  void handle_event(int subtask, std::shared_ptr<const SourceEvent> event) {
    if (started_) check(enumerator_->handle_source_event(subtask, std::move(event)));
  }

  // --- SplitEnumeratorContext ---
  int current_parallelism() const override { return parallelism_; }
  std::vector<int> registered_readers() const override {
    std::vector<int> out;
    for (const auto& [subtask, gateway] : readers_) out.push_back(subtask);
    return out;
  }
  void assign_splits(int subtask, std::vector<SplitT> splits) override {
    auto it = readers_.find(subtask);
    if (it == readers_.end()) {
      services_.fail_job(absl::FailedPreconditionError(fmt::format(
          "source '{}': enumerator assigned splits to unregistered reader {}", name_, subtask)));
      return;
    }
    auto& tracked = uncheckpointed_[subtask];
    for (const auto& split : splits) tracked.push_back(split);
    it->second->deliver_splits(std::move(splits));
  }
  void signal_no_more_splits(int subtask) override {
    auto it = readers_.find(subtask);
    if (it != readers_.end()) it->second->deliver_no_more_splits();
  }
  void send_event_to_source_reader(int subtask,
                                   std::shared_ptr<const SourceEvent> event) override {
    auto it = readers_.find(subtask);
    if (it != readers_.end()) it->second->deliver_event(std::move(event));
  }
  void run_in_coordinator_thread(absl::AnyInvocable<void() &&> fn) override {
    services_.coordinator->execute(std::move(fn));
  }
  void run_on_worker(absl::AnyInvocable<void() &&> fn) override {
    services_.coordinator->execute_on_worker(std::move(fn));
  }
  void fail_job(absl::Status status) override { services_.fail_job(std::move(status)); }
  MetricGroup& metric_group() override { return metrics_; }

 private:
  void check(absl::Status status) {
    if (!status.ok()) services_.fail_job(std::move(status));
  }

  std::string name_;
  std::string uid_;
  std::shared_ptr<const SourceT> source_;
  int parallelism_;
  JobServices& services_;
  MetricGroup& metrics_;
  std::unique_ptr<SplitEnumerator<SplitT, EnumT>> enumerator_;
  std::map<int, std::shared_ptr<ReaderGateway<SplitT>>> readers_;
  // Split assignments not yet covered by a completed checkpoint (Flink's assignment tracker).
  std::map<int, std::vector<SplitT>> uncheckpointed_;
  std::map<std::int64_t, std::map<int, std::vector<SplitT>>> assignments_by_checkpoint_;
  bool started_ = false;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_SOURCE_COORDINATOR_H_
