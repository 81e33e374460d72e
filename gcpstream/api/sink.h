#ifndef GCPSTREAM_API_SINK_H_
#define GCPSTREAM_API_SINK_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/api/mailbox.h"
#include "gcpstream/api/metrics.h"
#include "gcpstream/api/record.h"
#include "gcpstream/api/versioned_serializer.h"

namespace gcpstream {

// What a writer learns about each element besides its value.
struct SinkWriterContext {
  std::int64_t timestamp_ms = kNoTimestamp;           // the record's event time, if any
  std::int64_t current_watermark_ms = kMinWatermark;  // the writer's current watermark
};

// The runtime as a writer sees it when it is created.
class WriterInitContext {
 public:
  virtual ~WriterInitContext() = default;
  virtual int subtask_index() const = 0;
  virtual int parallelism() const = 0;
  // 0 for the first run of the job, incremented by every restart.
  virtual int attempt_number() const = 0;
  // e.g. "Sink: orders (2/4)#0": for thread and log names.
  virtual const std::string& task_name() const = 0;
  // The checkpoint the job restored from, if any.
  virtual std::optional<std::int64_t> restored_checkpoint_id() const = 0;
  // Posts completions back onto the writer's thread; yield_until() for backpressure.
  virtual MailboxExecutor& mailbox_executor() = 0;
  virtual ProcessingTimeService& processing_time_service() = 0;
  virtual MetricGroup& metric_group() = 0;
};

// Sink V2 writer. Every method runs on the subtask thread. A non-OK status fails the job.
template <typename T>
class SinkWriter {
 public:
  virtual ~SinkWriter() = default;
  virtual absl::Status write(const T& element, const SinkWriterContext& context) = 0;
  // Called before every checkpoint barrier passes (end_of_input = false) and once when the
  // input ends (end_of_input = true). On return, everything written before must be durable at
  // the destination (or, for committing writers, ready for prepare_commit()).
  virtual absl::Status flush(bool end_of_input) = 0;
  // Called once, on success and failure alike; releases resources. Must not block unboundedly.
  virtual absl::Status close() = 0;
};

template <typename T>
class Sink {
 public:
  using input_type = T;
  virtual ~Sink() = default;
  virtual absl::StatusOr<std::unique_ptr<SinkWriter<T>>> create_writer(
      WriterInitContext& context) const = 0;
};

// --- Writer state (Flink's SupportsWriterState / StatefulSinkWriter) ---

template <typename T, typename StateT>
class StatefulSinkWriter : public virtual SinkWriter<T> {
 public:
  // The writer's state at a checkpoint, taken after flush(false).
  virtual absl::StatusOr<std::vector<StateT>> snapshot_state(std::int64_t checkpoint_id) = 0;
};

// Mixed into a Sink whose writers keep state across checkpoints. On restore (possibly at a
// different parallelism) each writer receives the states of the subtasks mapped to it; see
// docs/runtime.md for the redistribution rule.
template <typename T, typename StateT>
class SupportsWriterState {
 public:
  using writer_state_type = StateT;
  virtual ~SupportsWriterState() = default;
  virtual absl::StatusOr<std::unique_ptr<StatefulSinkWriter<T, StateT>>> restore_writer(
      WriterInitContext& context, std::vector<StateT> states) const = 0;
  virtual const VersionedSerializer<StateT>& writer_state_serializer() const = 0;
};

// --- Two-phase commit (Flink's SupportsCommitter / CommittingSinkWriter / Committer) ---

template <typename T, typename CommT>
class CommittingSinkWriter : public virtual SinkWriter<T> {
 public:
  // After flush(): what the next committer run must make visible.
  virtual absl::StatusOr<std::vector<CommT>> prepare_commit() = 0;
  // The same, told which checkpoint the committables belong to (kEndOfInputCheckpoint,
  // INT64_MAX, for the end of a bounded input): what the runtime calls. A writer whose
  // committables name their checkpoint (FILE_LOADS job ids carry it) overrides this one.
  virtual absl::StatusOr<std::vector<CommT>> prepare_commit_at(std::int64_t /*checkpoint_id*/) {
    return prepare_commit();
  }
};

// One committable handed to Committer::commit(), with the committer's verdict on it.
template <typename CommT>
class CommitRequest {
 public:
  enum class Outcome { kSuccess, kRetryLater, kFailedKnown, kFailedUnknown, kAlreadyCommitted };

  explicit CommitRequest(CommT committable, int retries = 0)
      : committable_(std::move(committable)), retries_(retries) {}

  const CommT& committable() const { return committable_; }
  // How many times this committable was handed back with retry_later().
  int number_of_retries() const { return retries_; }

  // Fails the job: the committable cannot be committed.
  void signal_failed_with_known_reason(absl::Status status) {
    outcome_ = Outcome::kFailedKnown;
    failure_ = std::move(status);
  }
  void signal_failed_with_unknown_reason(absl::Status status) {
    outcome_ = Outcome::kFailedUnknown;
    failure_ = std::move(status);
  }
  // Keeps the committable for the next commit attempt.
  void retry_later() { outcome_ = Outcome::kRetryLater; }
  void update_and_retry_later(CommT committable) {
    committable_ = std::move(committable);
    outcome_ = Outcome::kRetryLater;
  }
  // A re-commit after restore found it already done: success.
  void signal_already_committed() { outcome_ = Outcome::kAlreadyCommitted; }

  Outcome outcome() const { return outcome_; }
  const absl::Status& failure() const { return failure_; }

 private:
  CommT committable_;
  int retries_ = 0;
  Outcome outcome_ = Outcome::kSuccess;
  absl::Status failure_;
};

class CommitterInitContext {
 public:
  virtual ~CommitterInitContext() = default;
  virtual int subtask_index() const = 0;
  virtual int parallelism() const = 0;
  virtual MetricGroup& metric_group() = 0;
};

// Commits committables after the checkpoint that produced them completed. Must be idempotent:
// after a restore the same committables are committed again. Runs on the subtask thread.
template <typename CommT>
class Committer {
 public:
  virtual ~Committer() = default;
  virtual absl::Status commit(std::vector<CommitRequest<CommT>>& requests) = 0;
  virtual absl::Status close() { return absl::OkStatus(); }
};

template <typename CommT>
class SupportsCommitter {
 public:
  using committable_type = CommT;
  virtual ~SupportsCommitter() = default;
  virtual absl::StatusOr<std::unique_ptr<Committer<CommT>>> create_committer(
      CommitterInitContext& context) const = 0;
  virtual const VersionedSerializer<CommT>& committable_serializer() const = 0;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_SINK_H_
