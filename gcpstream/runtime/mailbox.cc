#include "gcpstream/runtime/mailbox.h"

#include <algorithm>

#include <fmt/format.h>

#include <utility>

#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::runtime {

bool TaskMailbox::put(Letter letter) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return false;
    letters_.push_back(std::move(letter));
    has_mail_.store(true, std::memory_order_release);
  }
  cv_.notify_one();
  return true;
}

std::optional<TaskMailbox::Letter> TaskMailbox::take_locked(int min_priority) {
  for (auto it = letters_.begin(); it != letters_.end(); ++it) {
    if (it->priority >= min_priority) {
      Letter letter = std::move(*it);
      letters_.erase(it);
      has_mail_.store(!letters_.empty(), std::memory_order_release);
      return letter;
    }
  }
  return std::nullopt;
}

std::optional<TaskMailbox::Letter> TaskMailbox::try_take(int min_priority) {
  if (!has_mail()) return std::nullopt;
  std::lock_guard lock(mu_);
  return take_locked(min_priority);
}

std::optional<TaskMailbox::Letter> TaskMailbox::take(int min_priority, SteadyTime deadline) {
  std::unique_lock lock(mu_);
  const std::uint64_t generation = wake_generation_;
  while (true) {
    if (auto letter = take_locked(min_priority)) return letter;
    // Closed, or woken without a letter (cancellation, failure): let the caller re-check.
    if (closed_ || wake_generation_ != generation) return std::nullopt;
    if (deadline == kNoDeadline) {
      cv_.wait(lock);
    } else if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
      return take_locked(min_priority);
    }
  }
}

std::deque<TaskMailbox::Letter> TaskMailbox::close() {
  std::deque<Letter> rest;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    rest.swap(letters_);
    has_mail_.store(false, std::memory_order_release);
  }
  cv_.notify_all();
  return rest;
}

bool TaskMailbox::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

void TaskMailbox::wake_all() {
  {
    std::lock_guard lock(mu_);
    ++wake_generation_;
  }
  cv_.notify_all();
}

class MailboxProcessor::Executor final : public MailboxExecutor {
 public:
  Executor(MailboxProcessor* processor, int priority)
      : processor_(processor), mailbox_(processor->shared_mailbox()), priority_(priority) {}

  void execute(Mail mail, const char* description) override {
    mailbox_->put({priority_, std::move(mail), description});
  }

  absl::Status yield_until(absl::FunctionRef<bool()> done, SteadyTime deadline) override {
    while (!done()) {
      if (processor_->cancelled()) return absl::CancelledError("subtask is being cancelled");
      if (processor_->failed_.load(std::memory_order_acquire)) return processor_->failure();
      auto letter = processor_->timed_take(priority_, deadline, processor_->back_pressured_);
      if (!letter) {
        if (processor_->cancelled() || mailbox_->closed()) {
          return absl::CancelledError("subtask is being cancelled");
        }
        if (deadline != kNoDeadline && std::chrono::steady_clock::now() >= deadline) {
          return absl::DeadlineExceededError("deadline passed while yielding to the mailbox");
        }
        continue;
      }
      absl::Status status = processor_->run_letter(*letter);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<bool> try_yield() override {
    auto letter = mailbox_->try_take(priority_);
    if (!letter) return false;
    absl::Status status = processor_->run_letter(*letter);
    if (!status.ok()) return status;
    return true;
  }

  bool is_mailbox_thread() const override { return processor_->is_mailbox_thread(); }

 private:
  MailboxProcessor* processor_;
  std::shared_ptr<TaskMailbox> mailbox_;
  int priority_;
};

MailboxProcessor::MailboxProcessor() : mailbox_(std::make_shared<TaskMailbox>()) {}

MailboxProcessor::~MailboxProcessor() { mailbox_->close(); }

std::unique_ptr<MailboxExecutor> MailboxProcessor::executor(int priority) {
  return std::make_unique<Executor>(this, priority);
}

namespace {
std::int64_t SteadyNs(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
}  // namespace

std::chrono::nanoseconds MailboxProcessor::waited(const WaitClock& clock) {
  std::int64_t total = clock.total_ns.load(std::memory_order_relaxed);
  const std::int64_t since = clock.since_ns.load(std::memory_order_relaxed);
  if (since != 0) total += std::max<std::int64_t>(0, SteadyNs(std::chrono::steady_clock::now()) - since);
  return std::chrono::nanoseconds(total);
}

std::optional<TaskMailbox::Letter> MailboxProcessor::timed_take(int priority, SteadyTime deadline,
                                                                WaitClock& clock) {
  const std::int64_t start = SteadyNs(std::chrono::steady_clock::now());
  clock.since_ns.store(start, std::memory_order_relaxed);
  auto letter = mailbox_->take(priority, deadline);
  const std::int64_t end = SteadyNs(std::chrono::steady_clock::now());
  // The wait in progress ends before its time joins the total: a reader in between sees a
  // little less, never the same wait twice. Single writer: plain adds are enough.
  clock.since_ns.store(0, std::memory_order_relaxed);
  clock.total_ns.store(clock.total_ns.load(std::memory_order_relaxed) + (end - start),
                       std::memory_order_relaxed);
  return letter;
}

absl::Status MailboxProcessor::run_letter(TaskMailbox::Letter& letter) {
  absl::Status status;
  try {
    status = std::move(letter.mail)();
  } catch (const std::exception& e) {
    status = absl::UnknownError(fmt::format("mail '{}' threw: {}", letter.description, e.what()));
  } catch (...) {
    status = absl::UnknownError(
        fmt::format("mail '{}' threw a non-standard exception", letter.description));
  }
  if (!status.ok()) fail(status);
  return status;
}

absl::Status MailboxProcessor::run(absl::FunctionRef<absl::StatusOr<ActionResult>()> action) {
  while (true) {
    if (cancelled()) return absl::CancelledError("subtask cancelled");
    if (failed_.load(std::memory_order_acquire)) return failure();
    if (mailbox_->has_mail()) {
      while (auto letter = mailbox_->try_take(TaskMailbox::kTaskPriority)) {
        (void)run_letter(*letter);
        if (failed_.load(std::memory_order_acquire) || cancelled()) break;
      }
      continue;
    }
    if (suspended_) {
      auto letter = timed_take(TaskMailbox::kTaskPriority, kNoDeadline, idle_);
      if (letter) (void)run_letter(*letter);
      continue;
    }
    absl::StatusOr<ActionResult> result;
    try {
      result = action();
    } catch (const std::exception& e) {
      result = absl::UnknownError(fmt::format("user code threw: {}", e.what()));
    } catch (...) {
      result = absl::UnknownError("user code threw a non-standard exception");
    }
    if (!result.ok()) {
      fail(result.status());
      return failure();
    }
    switch (*result) {
      case ActionResult::kMore:
        break;
      case ActionResult::kNothingAvailable:
        suspended_ = true;
        break;
      case ActionResult::kEndOfInput:
        return absl::OkStatus();
    }
  }
}

absl::Status MailboxProcessor::run_mails_until(absl::FunctionRef<bool()> done,
                                               SteadyTime deadline) {
  while (!done()) {
    if (cancelled()) return absl::CancelledError("subtask cancelled");
    if (failed_.load(std::memory_order_acquire)) return failure();
    auto letter = mailbox_->take(TaskMailbox::kTaskPriority, deadline);
    if (!letter) {
      if (cancelled() || mailbox_->closed()) return absl::CancelledError("subtask cancelled");
      if (deadline != kNoDeadline && std::chrono::steady_clock::now() >= deadline) {
        return absl::DeadlineExceededError("deadline passed while running mails");
      }
      continue;
    }
    absl::Status status = run_letter(*letter);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

void MailboxProcessor::resume_default_action() {
  if (resume_pending_.exchange(true, std::memory_order_acq_rel)) return;
  mailbox_->put({TaskMailbox::kTaskPriority,
                 [this]() -> absl::Status {
                   resume_pending_.store(false, std::memory_order_release);
                   suspended_ = false;
                   return absl::OkStatus();
                 },
                 "resume default action"});
}

void MailboxProcessor::cancel() {
  cancelled_.store(true, std::memory_order_release);
  mailbox_->wake_all();
}

void MailboxProcessor::fail(absl::Status status) {
  {
    std::lock_guard lock(failure_mu_);
    if (failure_.ok()) failure_ = std::move(status);
  }
  failed_.store(true, std::memory_order_release);
  mailbox_->wake_all();
}

absl::Status MailboxProcessor::failure() const {
  std::lock_guard lock(failure_mu_);
  return failure_;
}

}  // namespace gcpstream::runtime
