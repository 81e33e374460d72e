#ifndef GCPSTREAM_RUNTIME_SUBTASK_H_
#define GCPSTREAM_RUNTIME_SUBTASK_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gcpstream/runtime/input_processor.h"
#include "gcpstream/runtime/job_services.h"
#include "gcpstream/runtime/mailbox.h"
#include "gcpstream/runtime/operator_state.h"
#include "gcpstream/runtime/stream_operator.h"
#include "gcpstream/runtime/timer_service.h"

namespace gcpstream::runtime {

// One parallel instance of a chain: a thread, its mailbox, the chain's operators and its input.
// Built by the job runner, then started; everything after start() runs on its thread except
// cancel() and the mails other threads post.
class Subtask final : public BarrierHandler {
 public:
  Subtask(std::string chain_name, int index, int parallelism, JobServices& services);
  ~Subtask() override;

  // --- building (before start) ---
  // A context for an operator of node `uid` at chain position `priority` (>= 1).
  OperatorContext& new_operator_context(const std::string& operator_name, const std::string& uid,
                                        int priority);
  // Operators in creation order: downstream ones first. Opened in this order, finished and
  // closed in the reverse one.
  void add_operator(std::unique_ptr<StreamOperator> op, const std::string& uid);
  void keep(std::unique_ptr<OutputBase> output) { owned_outputs_.push_back(std::move(output)); }
  void set_input(InputProcessor* input, std::unique_ptr<InputProcessor> owned = nullptr);
  // State to restore, per operator uid.
  void set_restored_state(std::map<std::string, OperatorStateReader> state) {
    restored_ = std::move(state);
  }
  MailboxProcessor& mailbox() { return mailbox_; }

  // --- running ---
  // Starts the thread; `on_done` runs on it at the end with the subtask's outcome (OK,
  // CANCELLED, or the failure).
  void start(std::function<void(Subtask&, absl::Status)> on_done);
  // Thread-safe: stop as soon as possible.
  void cancel() { mailbox_.cancel(); }
  void join();

  const std::string& name() const { return name_; }
  int index() const { return index_; }

  // BarrierHandler (checkpointing arrives in a later layer; barriers pass through here).
  absl::Status on_barrier(int channel, const CheckpointBarrier& barrier) override;
  absl::Status on_channel_finished(int channel) override;

 private:
  struct OperatorEntry {
    std::unique_ptr<StreamOperator> op;
    std::string uid;
  };
  absl::Status run_lifecycle();
  absl::Status flush_idle();

  std::string name_;
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
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_SUBTASK_H_
