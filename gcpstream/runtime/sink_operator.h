#ifndef GCPSTREAM_RUNTIME_SINK_OPERATOR_H_
#define GCPSTREAM_RUNTIME_SINK_OPERATOR_H_

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gcpstream/api/sink.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/runtime/output.h"
#include "gcpstream/runtime/stream_operator.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::runtime {

inline constexpr char kWriterStateList[] = "writer-state";
inline constexpr char kCommittablesList[] = "committables";
// Committables produced at end of input, committed by the final checkpoint (or at once when
// checkpointing is off).
inline constexpr std::int64_t kEndOfInputCheckpoint = std::numeric_limits<std::int64_t>::max();

template <typename SinkT>
concept HasWriterState = requires {
  typename SinkT::writer_state_type;
};
template <typename SinkT>
concept HasCommitter = requires {
  typename SinkT::committable_type;
};

template <typename SinkT>
struct WriterStateOf {
  using type = int;  // placeholder for sinks without writer state
};
template <HasWriterState SinkT>
struct WriterStateOf<SinkT> {
  using type = typename SinkT::writer_state_type;
};
template <typename SinkT>
struct CommittableOf {
  using type = int;  // placeholder for sinks without a committer
};
template <HasCommitter SinkT>
struct CommittableOf<SinkT> {
  using type = typename SinkT::committable_type;
};

// Drives a Sink V2 writer (and, for two-phase-commit sinks, its committer) at the end of a
// chain. The committer runs in the same subtask: committables are kept per checkpoint and
// committed when that checkpoint's completion is notified (all ids <= n at once, so a lost
// notification is healed by the next).
template <typename SinkT>
class SinkWriterOperator final : public StreamOperator,
                                 public Output<typename SinkT::input_type>,
                                 private WriterInitContext,
                                 private CommitterInitContext {
 public:
  using T = typename SinkT::input_type;

  SinkWriterOperator(std::shared_ptr<const SinkT> sink, OperatorContext& ctx,
                     bool commit_at_end_of_input)
      : sink_(std::move(sink)),
        ctx_(ctx),
        commit_at_end_of_input_(commit_at_end_of_input),
        records_in_(ctx.metric_group->counter(metric_names::kNumRecordsIn)) {}

  absl::Status initialize_state(const OperatorStateReader& restored) override {
    if constexpr (HasWriterState<SinkT>) {
      const auto& serializer = sink_->writer_state_serializer();
      for (const auto& e : restored.list(kWriterStateList)) {
        GCP_ASSIGN_OR_RETURN(auto state, serializer.deserialize(e.version, e.bytes));
        restored_states_.push_back(std::move(state));
      }
      restored_ = !restored.empty();
    }
    if constexpr (HasCommitter<SinkT>) {
      const auto& serializer = sink_->committable_serializer();
      for (const auto& e : restored.list(kCommittablesList)) {
        GCP_ASSIGN_OR_RETURN(auto committable, serializer.deserialize(e.version, e.bytes));
        pending_[kRestoredCheckpoint].push_back(std::move(committable));
      }
    }
    return absl::OkStatus();
  }

  absl::Status open() override {
    if constexpr (HasWriterState<SinkT>) {
      if (restored_) {
        GCP_ASSIGN_OR_RETURN(auto writer,
                             sink_->restore_writer(*this, std::move(restored_states_)));
        writer_ = std::move(writer);
      }
    }
    if (!writer_) {
      GCP_ASSIGN_OR_RETURN(writer_, sink_->create_writer(*this));
    }
    if constexpr (HasCommitter<SinkT>) {
      GCP_ASSIGN_OR_RETURN(committer_, sink_->create_committer(*this));
      // Restored committables are committed again before any new data flows (idempotent).
      if (pending_.count(kRestoredCheckpoint) > 0) {
        GCP_RETURN_IF_ERROR(commit_up_to(kRestoredCheckpoint, /*until_done=*/true));
      }
    }
    return absl::OkStatus();
  }

  absl::Status collect(StreamRecord<T>&& record) override {
    records_in_.inc_single_writer();
    context_.timestamp_ms = record.timestamp_ms;
    return writer_->write(record.value, context_);
  }
  absl::Status emit_watermark(std::int64_t watermark_ms) override {
    context_.current_watermark_ms = watermark_ms;
    return absl::OkStatus();
  }
  absl::Status emit_watermark_status(bool) override { return absl::OkStatus(); }

  absl::Status finish() override {
    GCP_RETURN_IF_ERROR(writer_->flush(true));
    finished_flush_ = true;
    if constexpr (HasCommitter<SinkT>) {
      GCP_RETURN_IF_ERROR(prepare_commit(kEndOfInputCheckpoint));
      if (commit_at_end_of_input_) {
        GCP_RETURN_IF_ERROR(commit_up_to(kEndOfInputCheckpoint, /*until_done=*/true));
      }
    }
    return absl::OkStatus();
  }

  absl::Status prepare_snapshot_pre_barrier(std::int64_t checkpoint_id) override {
    if (finished_flush_) return absl::OkStatus();
    GCP_RETURN_IF_ERROR(writer_->flush(false));
    if constexpr (HasCommitter<SinkT>) GCP_RETURN_IF_ERROR(prepare_commit(checkpoint_id));
    return absl::OkStatus();
  }

  absl::Status snapshot_state(std::int64_t checkpoint_id, OperatorStateWriter& state) override {
    if constexpr (HasWriterState<SinkT>) {
      state.declare(kWriterStateList);
      auto* stateful =
          dynamic_cast<StatefulSinkWriter<T, typename SinkT::writer_state_type>*>(writer_.get());
      if (stateful == nullptr) {
        return absl::FailedPreconditionError(
            fmt::format("sink '{}' declares writer state but its writer is not a "
                        "StatefulSinkWriter",
                        ctx_.operator_name));
      }
      GCP_ASSIGN_OR_RETURN(auto states, stateful->snapshot_state(checkpoint_id));
      const auto& serializer = sink_->writer_state_serializer();
      for (const auto& s : states) {
        GCP_ASSIGN_OR_RETURN(std::string bytes, serializer.serialize(s));
        state.add(kWriterStateList, serializer.version(), std::move(bytes));
      }
    }
    if constexpr (HasCommitter<SinkT>) {
      if (finished_flush_ && !eoi_snapshot_id_) eoi_snapshot_id_ = checkpoint_id;
      state.declare(kCommittablesList);
      const auto& serializer = sink_->committable_serializer();
      for (const auto& [id, committables] : pending_) {
        for (const auto& c : committables) {
          GCP_ASSIGN_OR_RETURN(std::string bytes, serializer.serialize(c));
          state.add(kCommittablesList, serializer.version(), std::move(bytes));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status notify_checkpoint_complete(std::int64_t checkpoint_id) override {
    if constexpr (HasCommitter<SinkT>) {
      // A checkpoint taken after end of input also covers what end of input prepared.
      const bool covers_end = eoi_snapshot_id_ && checkpoint_id >= *eoi_snapshot_id_;
      return commit_up_to(covers_end ? kEndOfInputCheckpoint : checkpoint_id,
                          /*until_done=*/false);
    }
    return absl::OkStatus();
  }

  absl::Status close() override {
    absl::Status status;
    if (writer_) status.Update(writer_->close());
    if constexpr (HasCommitter<SinkT>) {
      if (committer_) status.Update(committer_->close());
    }
    return status;
  }

 private:
  using Committable = typename CommittableOf<SinkT>::type;
  static constexpr std::int64_t kRestoredCheckpoint = std::numeric_limits<std::int64_t>::min();

  absl::Status prepare_commit(std::int64_t checkpoint_id) {
    if constexpr (HasCommitter<SinkT>) {
      auto* committing = dynamic_cast<CommittingSinkWriter<T, Committable>*>(writer_.get());
      if (committing == nullptr) {
        return absl::FailedPreconditionError(
            fmt::format("sink '{}' has a committer but its writer is not a CommittingSinkWriter",
                        ctx_.operator_name));
      }
      GCP_ASSIGN_OR_RETURN(auto committables, committing->prepare_commit_at(checkpoint_id));
      auto& slot = pending_[checkpoint_id];
      for (auto& c : committables) slot.push_back(std::move(c));
    }
    return absl::OkStatus();
  }

  // Commits every pending committable of checkpoints <= upto. With until_done, committables
  // the committer asks to retry are retried (yielding in between) until none is left.
  absl::Status commit_up_to(std::int64_t upto, bool until_done) {
    if constexpr (HasCommitter<SinkT>) {
      for (int round = 0;; ++round) {
        std::vector<CommitRequest<Committable>> requests;
        std::vector<std::int64_t> ids;
        for (auto it = pending_.begin(); it != pending_.end() && it->first <= upto;) {
          for (auto& c : it->second) {
            requests.emplace_back(std::move(c), retries_[it->first]);
          }
          ids.push_back(it->first);
          it = pending_.erase(it);
        }
        if (requests.empty()) return absl::OkStatus();
        GCP_RETURN_IF_ERROR(committer_->commit(requests));
        std::vector<Committable> again;
        for (auto& r : requests) {
          switch (r.outcome()) {
            case CommitRequest<Committable>::Outcome::kSuccess:
            case CommitRequest<Committable>::Outcome::kAlreadyCommitted:
              break;
            case CommitRequest<Committable>::Outcome::kRetryLater:
              again.push_back(r.committable());
              break;
            case CommitRequest<Committable>::Outcome::kFailedKnown:
            case CommitRequest<Committable>::Outcome::kFailedUnknown:
              return r.failure().ok() ? absl::InternalError(fmt::format("sink '{}': commit failed",
                                                                        ctx_.operator_name))
                                      : r.failure();
          }
        }
        if (again.empty()) return absl::OkStatus();
        // Keep them under the highest id they came from so the next notification retries.
        const std::int64_t key = ids.back();
        retries_[key] += 1;
        auto& slot = pending_[key];
        for (auto& c : again) slot.push_back(std::move(c));
        if (!until_done) return absl::OkStatus();
        // Back off briefly (yielding, so the subtask stays responsive) before retrying.
        const auto wake = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(std::min(1000, 10 << std::min(round, 6)));
        absl::Status s = ctx_.mailbox_executor->yield_until(
            [&] { return std::chrono::steady_clock::now() >= wake; }, wake);
        if (!s.ok() && s.code() != absl::StatusCode::kDeadlineExceeded) return s;
      }
    }
    return absl::OkStatus();
  }

  // --- WriterInitContext / CommitterInitContext ---
  int subtask_index() const override { return ctx_.subtask_index; }
  int parallelism() const override { return ctx_.parallelism; }
  int attempt_number() const override { return ctx_.attempt_number; }
  const std::string& task_name() const override { return ctx_.task_name; }
  std::optional<std::int64_t> restored_checkpoint_id() const override {
    return ctx_.restored_checkpoint_id;
  }
  MailboxExecutor& mailbox_executor() override { return *ctx_.mailbox_executor; }
  ProcessingTimeService& processing_time_service() override { return *ctx_.timer_service; }
  MetricGroup& metric_group() override { return *ctx_.metric_group; }

  std::shared_ptr<const SinkT> sink_;
  OperatorContext& ctx_;
  const bool commit_at_end_of_input_;
  Counter& records_in_;
  std::unique_ptr<SinkWriter<T>> writer_;
  SinkWriterContext context_;
  bool finished_flush_ = false;
  // The first checkpoint whose state includes the end-of-input committables.
  std::optional<std::int64_t> eoi_snapshot_id_;
  bool restored_ = false;
  std::vector<typename WriterStateOf<SinkT>::type> restored_states_;
  std::unique_ptr<Committer<Committable>> committer_;
  std::map<std::int64_t, std::vector<Committable>> pending_;
  std::map<std::int64_t, int> retries_;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_SINK_OPERATOR_H_
