#include "gcpstream/runtime/coordinator_executor.h"

namespace gcpstream::runtime {

CoordinatorExecutor::CoordinatorExecutor(int workers) {
  coordinator_thread_ = std::thread([this] { run(coordinator_); });
  coordinator_id_ = coordinator_thread_.get_id();
  for (int i = 0; i < workers; ++i) {
    worker_threads_.emplace_back([this] { run(workers_); });
  }
}

CoordinatorExecutor::~CoordinatorExecutor() { shutdown(); }

void CoordinatorExecutor::run(Queue& queue) {
  std::unique_lock lock(queue.mu);
  while (true) {
    queue.cv.wait(lock, [&] { return queue.stop || !queue.tasks.empty(); });
    if (queue.stop) return;
    auto task = std::move(queue.tasks.front());
    queue.tasks.pop_front();
    lock.unlock();
    std::move(task)();
    lock.lock();
  }
}

void CoordinatorExecutor::execute(absl::AnyInvocable<void() &&> task) {
  {
    std::lock_guard lock(coordinator_.mu);
    if (coordinator_.stop) return;
    coordinator_.tasks.push_back(std::move(task));
  }
  coordinator_.cv.notify_one();
}

void CoordinatorExecutor::execute_on_worker(absl::AnyInvocable<void() &&> task) {
  {
    std::lock_guard lock(workers_.mu);
    if (workers_.stop) return;
    workers_.tasks.push_back(std::move(task));
  }
  workers_.cv.notify_one();
}

void CoordinatorExecutor::shutdown() {
  for (Queue* q : {&coordinator_, &workers_}) {
    std::deque<absl::AnyInvocable<void() &&>> dropped;
    {
      std::lock_guard lock(q->mu);
      q->stop = true;
      dropped.swap(q->tasks);
    }
    q->cv.notify_all();
  }
  if (coordinator_thread_.joinable() && !in_coordinator_thread()) coordinator_thread_.join();
  for (auto& t : worker_threads_) {
    if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
  }
}

}  // namespace gcpstream::runtime
