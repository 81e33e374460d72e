#ifndef GCPSTREAM_RUNTIME_COORDINATOR_EXECUTOR_H_
#define GCPSTREAM_RUNTIME_COORDINATOR_EXECUTOR_H_

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"

namespace gcpstream::runtime {

// The job coordinator's threads: one coordinator thread that runs every enumerator call and
// coordinator decision in order, and a small worker pool for blocking work
// (SplitEnumeratorContext::call_async). Thread-safe.
class CoordinatorExecutor {
 public:
  explicit CoordinatorExecutor(int workers = 2);
  ~CoordinatorExecutor();  // shutdown()

  // Runs `task` on the coordinator thread (FIFO). Dropped after shutdown().
  void execute(absl::AnyInvocable<void() &&> task);
  // Runs `task` on a worker thread. Dropped after shutdown().
  void execute_on_worker(absl::AnyInvocable<void() &&> task);
  bool in_coordinator_thread() const { return std::this_thread::get_id() == coordinator_id_; }
  // Stops all threads after the task each is running; queued tasks are dropped.
  void shutdown();

 private:
  struct Queue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<absl::AnyInvocable<void() &&>> tasks;
    bool stop = false;
  };
  static void run(Queue& queue);

  Queue coordinator_;
  Queue workers_;
  std::thread coordinator_thread_;
  std::thread::id coordinator_id_;
  std::vector<std::thread> worker_threads_;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_COORDINATOR_EXECUTOR_H_
