#ifndef GCPSTREAM_RUNTIME_STREAM_OPERATOR_H_
#define GCPSTREAM_RUNTIME_STREAM_OPERATOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "gcpstream/api/mailbox.h"
#include "gcpstream/api/metrics.h"
#include "gcpstream/runtime/channel.h"
#include "gcpstream/runtime/mailbox.h"
#include "gcpstream/runtime/operator_state.h"

namespace gcpstream::runtime {

// Everything an operator instance may use; owned by its subtask, valid until close() returns.
struct OperatorContext {
  std::string operator_name;   // the name given in the job (e.g. "Sink: orders")
  std::string operator_uid;    // stable id used to match state on restore
  std::string task_name;       // "<operator> (i+1/n)#attempt"
  int subtask_index = 0;
  int parallelism = 1;
  int max_parallelism = 128;
  int attempt_number = 0;
  std::optional<std::int64_t> restored_checkpoint_id;
  MailboxExecutor* mailbox_executor = nullptr;  // at this operator's priority
  // The subtask's mailbox and this operator's priority, for notifications that may outlive
  // the operator (they hold the mailbox weakly).
  std::weak_ptr<TaskMailbox> mailbox;
  int priority = 1;
  ProcessingTimeService* timer_service = nullptr;
  MetricGroup* metric_group = nullptr;          // job.operator.subtask scope
};

// The lifecycle every operator in a chain follows, all on the subtask thread:
//   initialize_state (restore) -> open (tail first) -> records/events ->
//   finish (head first, at end of input) -> close (head first, always, also after failures).
// Checkpoints: prepare_snapshot_pre_barrier (head first; sinks flush here) -> snapshot_state
// -> ... later notify_checkpoint_complete / notify_checkpoint_aborted (as task mails).
class StreamOperator {
 public:
  virtual ~StreamOperator() = default;
  virtual absl::Status initialize_state(const OperatorStateReader& restored) {
    (void)restored;
    return absl::OkStatus();
  }
  virtual absl::Status open() { return absl::OkStatus(); }
  virtual absl::Status finish() { return absl::OkStatus(); }
  virtual absl::Status close() { return absl::OkStatus(); }

  virtual absl::Status prepare_snapshot_pre_barrier(std::int64_t checkpoint_id) {
    (void)checkpoint_id;
    return absl::OkStatus();
  }
  // Forwards a checkpoint barrier to other subtasks (exchange outputs do; others ignore it).
  virtual absl::Status emit_barrier(const CheckpointBarrier& barrier) {
    (void)barrier;
    return absl::OkStatus();
  }
  virtual absl::Status snapshot_state(std::int64_t checkpoint_id, OperatorStateWriter& state) {
    (void)checkpoint_id;
    (void)state;
    return absl::OkStatus();
  }
  virtual absl::Status notify_checkpoint_complete(std::int64_t checkpoint_id) {
    (void)checkpoint_id;
    return absl::OkStatus();
  }
  virtual absl::Status notify_checkpoint_aborted(std::int64_t checkpoint_id) {
    (void)checkpoint_id;
    return absl::OkStatus();
  }
  // Called on the subtask thread when the subtask is idle (no input right now): flush
  // anything buffered for latency (exchange buffers).
  virtual absl::Status on_idle() { return absl::OkStatus(); }
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_STREAM_OPERATOR_H_
