#ifndef GCPSTREAM_RUNTIME_SUBTASK_H_
#define GCPSTREAM_RUNTIME_SUBTASK_H_

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gcpstream/runtime/checkpoint_coordinator.h"
#include "gcpstream/runtime/input_processor.h"
#include "gcpstream/runtime/job_services.h"
#include "gcpstream/runtime/mailbox.h"
#include "gcpstream/runtime/operator_state.h"
#include "gcpstream/runtime/stream_operator.h"
#include "gcpstream/runtime/timer_service.h"

namespace gcpstream::runtime {

// One parallel instance of a chain: a thread, its mailbox, the chain's operators and its input.
// Built by the job attempt, then started; everything after start() runs on its thread except
// cancel() and the CheckpointParticipant methods, which post mails.
//
// Checkpoints: a source subtask (or one whose input has ended) performs checkpoint n when the
// coordinator's trigger mail arrives; any other subtask performs it when barrier n is aligned on
// its input. Performing = prepare_snapshot_pre_barrier on every operator (sinks flush), forward
// the barrier downstream, snapshot every operator, acknowledge to the coordinator. After its
// input ends (and finish() ran), a subtask stays alive until a checkpoint it took after
// finishing has completed, so committers commit end-of-input data.
class Subtask final : public BarrierHandler, public CheckpointParticipant {
 public:
  Subtask(std::string chain_name, int index, int parallelism, JobServices& services);
  ~Subtask() override;

  // --- building (before start) ---
  OperatorContext& new_operator_context(const std::string& operator_name, const std::string& uid,
                                        int priority);
  // Operators in creation order: downstream ones first. Opened in this order, finished and
  // closed in the reverse one.
  void add_operator(std::unique_ptr<StreamOperator> op, const std::string& uid);
  void keep(std::unique_ptr<OutputBase> output) { owned_outputs_.push_back(std::move(output)); }
  void set_input(InputProcessor* input, std::unique_ptr<InputProcessor> owned = nullptr);
  void set_is_source(bool is_source) { is_source_ = is_source; }
  void set_participant_index(int index) { participant_ = index; }
  void set_restored_state(std::map<std::string, OperatorStateReader> state) {
    restored_ = std::move(state);
  }
  MailboxProcessor& mailbox() { return mailbox_; }

  // --- running ---
  void start(std::function<void(Subtask&, absl::Status)> on_done);
  void cancel() { mailbox_.cancel(); }
  void join();
  int index() const { return index_; }

  // CheckpointParticipant (thread-safe)
  const std::string& name() const override { return name_; }
  void trigger_checkpoint(const CheckpointBarrier& barrier) override;
  void notify_checkpoint_complete(std::int64_t checkpoint_id) override;
  void notify_checkpoint_aborted(std::int64_t checkpoint_id) override;
  std::string waiting_on() const override;

  // BarrierHandler
  absl::Status on_aligned_barrier(const CheckpointBarrier& barrier) override;
  void on_alignment_started(std::int64_t checkpoint_id) override;

 private:
  struct OperatorEntry {
    std::unique_ptr<StreamOperator> op;
    std::string uid;
  };
  absl::Status run_lifecycle();
  void register_task_metrics();
  absl::Status flush_idle();
  absl::Status on_trigger(const CheckpointBarrier& barrier);
  absl::Status perform_checkpoint(const CheckpointBarrier& barrier);
  absl::Status on_complete(std::int64_t checkpoint_id);
  void post(Mail mail, const char* description);

  std::string name_;        // "<chain> (<index+1>/<parallelism>)#<attempt>"
  std::string chain_name_;  // the task: "Source: a -> Map"
  int index_;
  int parallelism_;
  JobServices& services_;
  MailboxProcessor mailbox_;
  std::deque<OperatorContext> contexts_;
  std::vector<std::unique_ptr<MailboxExecutor>> executors_;
  std::vector<std::unique_ptr<MailboxTimerService>> timer_services_;
  std::vector<OperatorEntry> operators_;
  std::vector<std::unique_ptr<OutputBase>> owned_outputs_;
  InputProcessor* input_ = nullptr;
  std::unique_ptr<InputProcessor> owned_input_;
  std::map<std::string, OperatorStateReader> restored_;
  std::thread thread_;
  // The subtask thread's id, for waiting_on() on other threads.
  std::atomic<std::thread::id> thread_id_{};

  // Checkpoint state, subtask thread only.
  bool is_source_ = false;
  int participant_ = -1;
  bool finished_ = false;
  bool stopped_ = false;
  bool stop_complete_ = false;
  std::optional<std::int64_t> stop_id_;
  std::int64_t performed_ = 0;
  std::optional<CheckpointBarrier> deferred_trigger_;
  std::optional<std::int64_t> first_after_finish_;
  bool final_done_ = false;
  std::int64_t aligning_id_ = 0;
  std::chrono::steady_clock::time_point alignment_started_;
  MetricGroup* task_metrics_ = nullptr;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_SUBTASK_H_
