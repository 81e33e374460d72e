#include "gcpstream/runtime/subtask.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/util/absl_fmt.h"
#include "gcpstream/util/wait_notice.h"

namespace gcpstream::runtime {
namespace {

// Runs `fn`, turning an exception thrown by user code into a status.
template <typename F>
absl::Status Guard(const char* phase, const std::string& op, F&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return absl::UnknownError(fmt::format("{} of '{}' threw: {}", phase, op, e.what()));
  } catch (...) {
    return absl::UnknownError(fmt::format("{} of '{}' threw a non-standard exception", phase, op));
  }
}

}  // namespace

Subtask::Subtask(std::string chain_name, int index, int parallelism, JobServices& services)
    : name_(fmt::format("{} ({}/{})#{}", chain_name, index + 1, parallelism,
                        services.attempt_number)),
      chain_name_(chain_name),
      index_(index),
      parallelism_(parallelism),
      services_(services) {}

Subtask::~Subtask() { join(); }

OperatorContext& Subtask::new_operator_context(const std::string& operator_name,
                                               const std::string& uid, int priority) {
  executors_.push_back(mailbox_.executor(priority));
  timer_services_.push_back(
      std::make_unique<MailboxTimerService>(services_.timers, mailbox_.shared_mailbox(), priority));
  OperatorContext& ctx = contexts_.emplace_back();
  ctx.operator_name = operator_name;
  ctx.operator_uid = uid;
  ctx.task_name = name_;
  ctx.subtask_index = index_;
  ctx.parallelism = parallelism_;
  ctx.max_parallelism = services_.config.max_parallelism;
  ctx.attempt_number = services_.attempt_number;
  ctx.mailbox_executor = executors_.back().get();
  ctx.mailbox = mailbox_.shared_mailbox();
  ctx.priority = priority;
  ctx.timer_service = timer_services_.back().get();
  ctx.metric_group = &services_.metrics->group({{"job", services_.job_name},
                                                {"operator", operator_name},
                                                {"subtask", std::to_string(index_)}});
  return ctx;
}

void Subtask::add_operator(std::unique_ptr<StreamOperator> op, const std::string& uid) {
  operators_.push_back({std::move(op), uid});
}

void Subtask::set_input(InputProcessor* input, std::unique_ptr<InputProcessor> owned) {
  input_ = input;
  owned_input_ = std::move(owned);
}

void Subtask::start(std::function<void(Subtask&, absl::Status)> on_done) {
  thread_ = std::thread([this, on_done = std::move(on_done)] {
    thread_id_.store(std::this_thread::get_id());
    mailbox_.bind_to_current_thread();
    absl::Status status = run_lifecycle();
    on_done(*this, status);
  });
}

std::string Subtask::waiting_on() const { return util::WaitNotice::of(thread_.get_id()); }

void Subtask::join() {
  if (thread_.joinable()) thread_.join();
}

void Subtask::post(Mail mail, const char* description) {
  mailbox_.mailbox().put({TaskMailbox::kTaskPriority, std::move(mail), description});
}

void Subtask::trigger_checkpoint(const CheckpointBarrier& barrier) {
  post([this, barrier] { return on_trigger(barrier); }, "trigger checkpoint");
}

void Subtask::notify_checkpoint_complete(std::int64_t checkpoint_id) {
  post([this, checkpoint_id] { return on_complete(checkpoint_id); }, "checkpoint complete");
}

void Subtask::notify_checkpoint_aborted(std::int64_t checkpoint_id) {
  post(
      [this, checkpoint_id]() -> absl::Status {
        if (deferred_trigger_ && deferred_trigger_->checkpoint_id <= checkpoint_id) {
          deferred_trigger_.reset();
        }
        for (auto& entry : operators_) {
          GCP_RETURN_IF_ERROR(Guard("notify_checkpoint_aborted", entry.uid, [&] {
            return entry.op->notify_checkpoint_aborted(checkpoint_id);
          }));
        }
        return absl::OkStatus();
      },
      "checkpoint aborted");
}

void Subtask::on_alignment_started(std::int64_t checkpoint_id) {
  aligning_id_ = checkpoint_id;
  alignment_started_ = std::chrono::steady_clock::now();
}

absl::Status Subtask::on_aligned_barrier(const CheckpointBarrier& barrier) {
  return perform_checkpoint(barrier);
}

absl::Status Subtask::on_trigger(const CheckpointBarrier& barrier) {
  if (barrier.checkpoint_id <= performed_) return absl::OkStatus();
  if (is_source_ || finished_ || stopped_) return perform_checkpoint(barrier);
  // A running subtask with inputs takes the checkpoint when the barrier has arrived on all of
  // them; should its inputs end first, it takes it when it finishes.
  deferred_trigger_ = barrier;
  return absl::OkStatus();
}

absl::Status Subtask::perform_checkpoint(const CheckpointBarrier& barrier) {
  const std::int64_t id = barrier.checkpoint_id;
  if (id <= performed_) return absl::OkStatus();
  performed_ = id;
  if (deferred_trigger_ && deferred_trigger_->checkpoint_id <= id) deferred_trigger_.reset();
  if (!finished_ && !stopped_) {
    // Head first, so what a flush emits still reaches the operators after it; then the
    // barrier goes downstream before the (possibly slower) snapshots.
    for (auto it = operators_.rbegin(); it != operators_.rend(); ++it) {
      GCP_RETURN_IF_ERROR(Guard("prepare_snapshot_pre_barrier", it->uid,
                                [&] { return it->op->prepare_snapshot_pre_barrier(id); }));
    }
    for (auto it = operators_.rbegin(); it != operators_.rend(); ++it) {
      GCP_RETURN_IF_ERROR(
          Guard("emit_barrier", it->uid, [&] { return it->op->emit_barrier(barrier); }));
    }
  }
  SubtaskSnapshot snapshot;
  if (aligning_id_ == id) {
    snapshot.alignment_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - alignment_started_)
                                .count();
  }
  for (auto& entry : operators_) {
    OperatorStateWriter state;
    GCP_RETURN_IF_ERROR(
        Guard("snapshot_state", entry.uid, [&] { return entry.op->snapshot_state(id, state); }));
    if (state.lists().empty()) continue;
    snapshot.operators.push_back(
        {entry.uid, parallelism_, index_, std::move(state.mutable_lists())});
  }
  if (services_.checkpoints != nullptr) {
    services_.checkpoints->acknowledge(id, participant_, std::move(snapshot));
  }
  if (finished_ && !first_after_finish_) first_after_finish_ = id;
  if (barrier.stop_with_savepoint) {
    stopped_ = true;
    stop_id_ = id;
  }
  return absl::OkStatus();
}

absl::Status Subtask::on_complete(std::int64_t checkpoint_id) {
  for (auto& entry : operators_) {
    GCP_RETURN_IF_ERROR(Guard("notify_checkpoint_complete", entry.uid,
                              [&] { return entry.op->notify_checkpoint_complete(checkpoint_id); }));
  }
  if (first_after_finish_ && checkpoint_id >= *first_after_finish_) final_done_ = true;
  if (stop_id_ && checkpoint_id >= *stop_id_) {
    stop_complete_ = true;
    mailbox_.resume_default_action();
  }
  return absl::OkStatus();
}

absl::Status Subtask::flush_idle() {
  for (auto& entry : operators_) {
    absl::Status s = entry.op->on_idle();
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

void Subtask::register_task_metrics() {
  // Task-level metrics (Flink's task scope): where the subtask thread's time went, and the
  // watermark its input passed on. Cumulative values; observers derive per-second rates.
  task_metrics_ = &services_.metrics->group(
      {{"job", services_.job_name}, {"task", chain_name_}, {"subtask", std::to_string(index_)}});
  const auto started = std::chrono::steady_clock::now();
  auto ms = [](std::chrono::nanoseconds ns) {
    return static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(ns).count());
  };
  task_metrics_->gauge(metric_names::kAccumulatedBackPressuredTimeMs,
                       [this, ms] { return ms(mailbox_.back_pressured_time()); });
  task_metrics_->gauge(metric_names::kAccumulatedIdleTimeMs,
                       [this, ms] { return ms(mailbox_.idle_time()); });
  task_metrics_->gauge(metric_names::kAccumulatedBusyTimeMs, [this, ms, started] {
    const auto elapsed = std::chrono::steady_clock::now() - started;
    const auto busy = elapsed - mailbox_.idle_time() - mailbox_.back_pressured_time();
    return ms(std::max(std::chrono::nanoseconds(0),
                       std::chrono::duration_cast<std::chrono::nanoseconds>(busy)));
  });
  if (input_ != nullptr && input_->input_watermark()) {
    task_metrics_->gauge(metric_names::kCurrentInputWatermark, [this] {
      return static_cast<double>(input_->input_watermark().value_or(kMinWatermark));
    });
  }
}

absl::Status Subtask::run_lifecycle() {
  register_task_metrics();
  absl::Status status;
  // Restore, then open downstream operators first so they are ready for records.
  for (auto& entry : operators_) {
    auto it = restored_.find(entry.uid);
    if (it == restored_.end()) continue;
    status = Guard("initialize_state", entry.uid,
                   [&] { return entry.op->initialize_state(it->second); });
    if (!status.ok()) break;
  }
  std::size_t opened = 0;
  if (status.ok()) {
    for (auto& entry : operators_) {
      status = Guard("open", entry.uid, [&] { return entry.op->open(); });
      if (!status.ok()) break;
      ++opened;
    }
  }
  if (status.ok()) {
    status = mailbox_.run([this]() -> absl::StatusOr<MailboxProcessor::ActionResult> {
      if (stopped_) {
        // After a stop-with-savepoint barrier nothing more is read; the subtask ends once the
        // savepoint completed (and committers committed).
        return stop_complete_ ? MailboxProcessor::ActionResult::kEndOfInput
                              : MailboxProcessor::ActionResult::kNothingAvailable;
      }
      auto result = input_->process_input();
      if (result.ok() && *result == MailboxProcessor::ActionResult::kNothingAvailable) {
        absl::Status s = flush_idle();
        if (!s.ok()) return s;
      }
      return result;
    });
  }
  if (status.ok() && !stopped_) {
    // End of input: finish head first, so what an upstream operator emits while finishing
    // still reaches the operators after it.
    for (auto it = operators_.rbegin(); it != operators_.rend(); ++it) {
      status = Guard("finish", it->uid, [&] { return it->op->finish(); });
      if (!status.ok()) break;
    }
    finished_ = true;
    if (status.ok() && services_.checkpoints != nullptr &&
        FinalCheckpointEnabled(services_.config)) {
      // A checkpoint triggered while our inputs were still open is taken now.
      if (deferred_trigger_) status = perform_checkpoint(*deferred_trigger_);
      if (status.ok()) {
        services_.checkpoints->participant_finished(participant_);
        status = mailbox_.run_mails_until([this] { return final_done_; });
        if (status.ok()) services_.checkpoints->participant_exited(participant_);
      }
    }
  }
  if (!status.ok()) mailbox_.fail(status);
  // Close everything that was opened (head first), also after a failure. A close error only
  // becomes the outcome when nothing failed before.
  for (std::size_t i = opened; i-- > 0;) {
    auto& entry = operators_[i];
    absl::Status s = Guard("close", entry.uid, [&] { return entry.op->close(); });
    if (status.ok() && !s.ok()) status = s;
  }
  for (auto& ctx : contexts_) services_.metrics->freeze(*ctx.metric_group);
  services_.metrics->freeze(*task_metrics_);
  mailbox_.mailbox().close();
  return status;
}

}  // namespace gcpstream::runtime
