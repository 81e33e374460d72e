#ifndef GCPSTREAM_API_MAILBOX_H_
#define GCPSTREAM_API_MAILBOX_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gcpstream {

// THE THREADING RULE OF GCPSTREAM
//
// Every subtask runs on exactly one thread, and that thread owns all of the subtask's state:
// operators, source readers, sink writers, serializers, failure handlers. Nothing else may touch
// that state. Work that finishes elsewhere (a gRPC completion, a fetcher thread, a timer) must
// not change the state directly: it posts a *mail* with MailboxExecutor::execute(), and the mail
// runs later on the subtask thread, between records.
//
// Waiting is done by yielding, never by blocking: a writer at its in-flight cap calls
// yield_until(), which runs mails (including the completions that will free capacity) until the
// condition holds. The subtask thread therefore never sleeps on a lock or a future that only
// another mail could complete.
//
// Priorities: each operator in a chain gets an executor whose priority is its position in the
// chain plus one (later operators rank higher). yield_until() runs only mails of the executor's
// priority or higher, so a sink yielding inside write() runs its own completions but not
// subtask-level mails (checkpoint triggers, split assignments: priority 0), which therefore never
// interleave with a half-processed record.

// A unit of work for the subtask thread. Returning a non-OK status fails the subtask.
using Mail = absl::AnyInvocable<absl::Status() &&>;

using SteadyTime = std::chrono::steady_clock::time_point;
inline constexpr SteadyTime kNoDeadline = SteadyTime::max();

class MailboxExecutor {
 public:
  virtual ~MailboxExecutor() = default;

  // Thread-safe; callable from any thread. Enqueues `mail` at this executor's priority.
  // Mail posted after the subtask has ended is discarded without running. `description` (for
  // error messages) must be a string literal: it is kept as a pointer, so posting a mail
  // allocates nothing beyond the mail itself.
  virtual void execute(Mail mail, const char* description) = 0;

  // Subtask thread only. Runs mails of this executor's priority or higher until `done()` is
  // true, blocking while there is none. `done` is evaluated before the first wait and after
  // every mail, so whatever makes it true must post a mail (completions do).
  // Returns OK when done; CANCELLED when the subtask is being cancelled; DEADLINE_EXCEEDED
  // when `deadline` passes first; or the first error a mail it ran returned (that error also
  // fails the subtask).
  virtual absl::Status yield_until(absl::FunctionRef<bool()> done,
                                   SteadyTime deadline = kNoDeadline) = 0;

  // Subtask thread only. Runs at most one pending mail of sufficient priority without
  // blocking; returns whether one ran, or the mail's error.
  virtual absl::StatusOr<bool> try_yield() = 0;

  // Whether the calling thread is this subtask's thread.
  virtual bool is_mailbox_thread() const = 0;
};

// Processing-time timers that fire as mails on the subtask thread.
class ProcessingTimeService {
 public:
  class Timer {
   public:
    virtual ~Timer() = default;
    // Best effort: a timer whose mail is already queued still runs.
    virtual void cancel() = 0;
  };
  virtual ~ProcessingTimeService() = default;
  virtual SteadyTime now() const = 0;
  // Runs `callback` as a mail (at the owning executor's priority) at or after `when`.
  virtual std::shared_ptr<Timer> register_timer(SteadyTime when, Mail callback) = 0;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_MAILBOX_H_
