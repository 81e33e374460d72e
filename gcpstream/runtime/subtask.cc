#include "gcpstream/runtime/subtask.h"

#include <exception>

#include <fmt/format.h>

#include "gcpstream/util/absl_fmt.h"

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
      index_(index),
      parallelism_(parallelism),
      services_(services) {}

Subtask::~Subtask() { join(); }

OperatorContext& Subtask::new_operator_context(const std::string& operator_name,
                                               const std::string& uid, int priority) {
  executors_.push_back(mailbox_.executor(priority));
  timer_services_.push_back(std::make_unique<MailboxTimerService>(
      services_.timers, mailbox_.shared_mailbox(), priority));
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
    mailbox_.bind_to_current_thread();
    absl::Status status = run_lifecycle();
    on_done(*this, status);
  });
}

void Subtask::join() {
  if (thread_.joinable()) thread_.join();
}

absl::Status Subtask::flush_idle() {
  for (auto& entry : operators_) {
    absl::Status s = entry.op->on_idle();
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Subtask::run_lifecycle() {
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
      auto result = input_->process_input();
      if (result.ok() && *result == MailboxProcessor::ActionResult::kNothingAvailable) {
        absl::Status s = flush_idle();
        if (!s.ok()) return s;
      }
      return result;
    });
  }
  if (status.ok()) {
    // End of input: finish head first, so what an upstream operator emits while finishing
    // still reaches the operators after it.
    for (auto it = operators_.rbegin(); it != operators_.rend(); ++it) {
      status = Guard("finish", it->uid, [&] { return it->op->finish(); });
      if (!status.ok()) break;
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
  mailbox_.mailbox().close();
  return status;
}

absl::Status Subtask::on_barrier(int channel, const CheckpointBarrier& barrier) {
  (void)channel;
  (void)barrier;
  return absl::OkStatus();
}

absl::Status Subtask::on_channel_finished(int channel) {
  (void)channel;
  return absl::OkStatus();
}

}  // namespace gcpstream::runtime
