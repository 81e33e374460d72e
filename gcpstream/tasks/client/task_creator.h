#ifndef GCPSTREAM_TASKS_CLIENT_TASK_CREATOR_H_
#define GCPSTREAM_TASKS_CLIENT_TASK_CREATOR_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "gcpstream/connector/recovery_backoff.h"
#include "gcpstream/connector/sink_outcome.h"
#include "gcpstream/tasks/client/cloud_tasks_stub.h"
#include "gcpstream/util/timer_thread.h"

namespace gcpstream::tasks {

// The retries CreateTask gets. Google's generated clients give CreateTask no retryable codes at
// all (every mutating Cloud Tasks method is configured that way), and an unnamed create is not
// idempotent, so the sink owns this loop. Two budgets, each exponential with ±25 % jitter:
//  - UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED: 100 ms doubling to 10 s, 8 attempts
//    in total (the first included);
//  - NOT_FOUND: 500 ms doubling to 2 s, 3 attempts. A queue idle for 30 days may answer
//    NOT_FOUND for a few minutes while it reactivates, but a mistyped queue must fail fast.
// Every attempt carries `attempt_timeout` (20 s, the generated client's CreateTask timeout).
// `max_attempts` of each budget counts the retries (the delays between attempts), so 7 and 2
// here are 8 and 3 attempts in all.
struct CreateTaskRetrySettings {
  connector::RecoveryOptions transient{std::chrono::milliseconds(100),
                                       std::chrono::milliseconds(10000), 7, 0.25};
  connector::RecoveryOptions not_found{std::chrono::milliseconds(500),
                                       std::chrono::milliseconds(2000), 2, 0.25};
  std::chrono::milliseconds attempt_timeout{20000};
};

// What the creator reports besides outcomes. Every hook runs on a gRPC thread under the
// creator's lock, never after shutdown() began, so it must be cheap, must not call back into the
// creator, and may count into what the writer owns. Empty hooks are skipped.
struct CreateTaskHooks {
  // A failed attempt that will be retried (its code). The final failure of a create is not
  // reported here: it comes back as an outcome.
  std::function<void(absl::StatusCode)> on_retried_failure;
  // A named create answered ALREADY_EXISTS: the task exists, so this counts as success.
  std::function<void()> on_deduplicated;
  // Random source in [0, 1) for the jitter; empty = a per-create engine.
  std::function<double()> uniform01;
};

// Creates tasks in one queue, one CreateTask RPC per task, and reports each task exactly once
// to `listener` as a SinkOutcome<Task>: OK (created, or ALREADY_EXISTS for a named task), or the
// final failure with the task handed back — a code outside both budgets at once, or the last
// code of an exhausted budget (its message says how many attempts were made).
//
// A retryable failure waits out its backoff on `timers` and the same request is sent again, so
// a named task keeps its name and an attempt whose answer was lost comes back ALREADY_EXISTS.
// create() never blocks. Thread-safe; shutdown() is the one blocking call. Create it with
// std::make_shared (a retry timer holds it weakly).
class TaskCreator : public std::enable_shared_from_this<TaskCreator> {
 public:
  using Task = google::cloud::tasks::v2::Task;

  // `parent` is the queue's resource name. `timers` is shared by the creators of one writer.
  TaskCreator(std::string parent, std::shared_ptr<CloudTasksStub> stub,
              std::shared_ptr<util::TimerThread> timers, CreateTaskRetrySettings settings,
              CreateTaskHooks hooks,
              std::shared_ptr<connector::SinkOutcomeListener<Task>> listener);
  ~TaskCreator();

  // Sends `task` to the queue. A task with a name is a named create; its name must be the
  // full task name in this queue.
  void create(Task&& task, std::uint64_t token);

  // Creates waiting out a backoff now (for the parkedTasks gauge). Thread-safe.
  std::int64_t waiting_retry() const { return waiting_.load(std::memory_order_relaxed); }

  // Fails every create waiting for a retry with CANCELLED, cancels those in flight, and returns
  // once every outcome was delivered. Idempotent; later create() calls fail with CANCELLED.
  absl::Status shutdown();

 private:
  struct Call;
  void send(const std::shared_ptr<Call>& call);
  void on_answer(const std::shared_ptr<Call>& call, absl::StatusOr<Task> answer);
  void finish(const std::shared_ptr<Call>& call, absl::Status status);

  const std::string parent_;
  std::shared_ptr<CloudTasksStub> stub_;
  std::shared_ptr<util::TimerThread> timers_;
  CreateTaskRetrySettings settings_;
  CreateTaskHooks hooks_;
  std::shared_ptr<connector::SinkOutcomeListener<Task>> listener_;

  std::mutex mu_;
  std::condition_variable all_done_;
  bool shutting_down_ = false;
  // Live creates by id: cancel functions of those in flight, timers of those waiting.
  std::map<std::uint64_t, std::shared_ptr<Call>> live_;
  std::uint64_t next_id_ = 0;
  std::atomic<std::int64_t> waiting_{0};
};

}  // namespace gcpstream::tasks

#endif  // GCPSTREAM_TASKS_CLIENT_TASK_CREATOR_H_
