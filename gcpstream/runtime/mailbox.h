#ifndef GCPSTREAM_RUNTIME_MAILBOX_H_
#define GCPSTREAM_RUNTIME_MAILBOX_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "gcpstream/api/mailbox.h"

namespace gcpstream::runtime {

// The queue behind a subtask's mailbox: thread-safe, FIFO within a priority filter.
// See gcpstream/api/mailbox.h for the threading rule it implements.
class TaskMailbox {
 public:
  // Priority of subtask-level mails (checkpoint triggers, split assignment, availability).
  static constexpr int kTaskPriority = 0;

  struct Letter {
    int priority = kTaskPriority;
    Mail mail;
    const char* description = "";  // a string literal
  };

  // Thread-safe. Returns false (and drops the mail) once the mailbox is closed.
  bool put(Letter letter);
  // Subtask thread. The first letter with priority >= min_priority, if any.
  std::optional<Letter> try_take(int min_priority);
  // Subtask thread. Blocks until a letter with priority >= min_priority arrives, the deadline
  // passes (nullopt) or the mailbox is closed (nullopt).
  std::optional<Letter> take(int min_priority, SteadyTime deadline);
  // Cheap check usable per record: whether any letter may be queued.
  bool has_mail() const { return has_mail_.load(std::memory_order_acquire); }
  // Closes the mailbox: later puts are refused, blocked takers wake. Returns what was queued.
  std::deque<Letter> close();
  bool closed() const;
  // Wakes a blocked taker without a letter (used by cancellation).
  void wake_all();

 private:
  std::optional<Letter> take_locked(int min_priority);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Letter> letters_;
  bool closed_ = false;
  std::uint64_t wake_generation_ = 0;
  std::atomic<bool> has_mail_{false};
};

// Runs one subtask's mailbox: the loop that alternates mails with the subtask's default action
// (reading input), suspension while there is no input, cancellation and the first failure.
class MailboxProcessor {
 public:
  enum class ActionResult { kMore, kNothingAvailable, kEndOfInput };

  MailboxProcessor();
  ~MailboxProcessor();

  // Binds the processor to the calling thread (the subtask thread).
  void bind_to_current_thread() { owner_ = std::this_thread::get_id(); }
  bool is_mailbox_thread() const { return std::this_thread::get_id() == owner_; }

  // An executor posting at `priority` (operators: chain index + 1).
  std::unique_ptr<MailboxExecutor> executor(int priority);
  TaskMailbox& mailbox() { return *mailbox_; }
  std::shared_ptr<TaskMailbox> shared_mailbox() { return mailbox_; }

  // Runs mails and `action` until the action reports end of input, the subtask is cancelled or
  // something fails. Returns the first failure, CANCELLED, or OK at end of input.
  absl::Status run(absl::FunctionRef<absl::StatusOr<ActionResult>()> action);

  // Runs mails until `done` (subtask thread; all priorities). Used for draining at the end.
  absl::Status run_mails_until(absl::FunctionRef<bool()> done, SteadyTime deadline = kNoDeadline);

  // Thread-safe: makes a suspended default action run again (coalesced).
  void resume_default_action();

  // Thread-safe: asks the subtask to stop as soon as possible. Blocked yields return CANCELLED.
  void cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  // Records a failure (first one wins) and wakes the loop. Thread-safe.
  void fail(absl::Status status);
  absl::Status failure() const;

  // Runs one letter, recording its failure.
  absl::Status run_letter(TaskMailbox::Letter& letter);

  // Thread-safe. Time the subtask thread spent so far waiting in its mailbox with the default
  // action suspended for lack of input (idle), and waiting inside a yield (an operator blocked
  // on a full output channel or an in-flight cap: back-pressured). Mails run meanwhile are
  // not counted in either. A wait in progress counts up to now.
  std::chrono::nanoseconds idle_time() const { return waited(idle_); }
  std::chrono::nanoseconds back_pressured_time() const { return waited(back_pressured_); }

 private:
  class Executor;

  // Time spent in one kind of wait: finished waits, and the start of the one in progress (0:
  // none). Written by the subtask thread only, read by any.
  struct WaitClock {
    std::atomic<std::int64_t> total_ns{0};
    std::atomic<std::int64_t> since_ns{0};  // steady_clock, ns since its epoch
  };
  static std::chrono::nanoseconds waited(const WaitClock& clock);
  // Takes the next letter, counting the time waited on `clock`.
  std::optional<TaskMailbox::Letter> timed_take(int priority, SteadyTime deadline,
                                                WaitClock& clock);

  std::shared_ptr<TaskMailbox> mailbox_;
  std::thread::id owner_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> resume_pending_{false};
  bool suspended_ = false;
  mutable std::mutex failure_mu_;
  absl::Status failure_;
  std::atomic<bool> failed_{false};
  WaitClock idle_;
  WaitClock back_pressured_;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_MAILBOX_H_
