#include "gcpstream/connector/bounded_shutdown.h"

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::connector {

Counter& ProcessCounter(std::string_view name) {
  static std::mutex mu;
  static auto* counters = new std::map<std::string, std::unique_ptr<Counter>, std::less<>>();
  std::lock_guard lock(mu);
  auto it = counters->find(name);
  if (it == counters->end()) {
    it = counters->emplace(std::string(name), std::make_unique<Counter>()).first;
  }
  return *it->second;
}

ShutdownResult BoundedShutdown(std::vector<ShutdownTask> tasks, std::chrono::milliseconds timeout,
                               std::string_view abandoned_counter) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<bool> done;
    absl::Status error;
  };
  auto shared = std::make_shared<Shared>();
  shared->done.assign(tasks.size(), false);
  // Ask every client to stop first, then wait on all of them: the waits overlap.
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    std::thread([shared, i, close = std::move(tasks[i].close)] {
      absl::Status s;
      try {
        s = close();
      } catch (const std::exception& e) {
        s = absl::InternalError(e.what());
      }
      std::lock_guard lock(shared->mu);
      shared->done[i] = true;
      if (shared->error.ok() && !s.ok()) shared->error = s;
      shared->cv.notify_all();
    }).detach();
  }
  ShutdownResult result;
  std::unique_lock lock(shared->mu);
  shared->cv.wait_for(lock, timeout, [&] {
    for (bool d : shared->done) {
      if (!d) return false;
    }
    return true;
  });
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (shared->done[i]) continue;
    result.abandoned.push_back(tasks[i].name);
    ProcessCounter(abandoned_counter).inc();
    spdlog::warn("gave up waiting for the shutdown of {} after {} ms; it keeps running in the "
                 "background (counted in {})",
                 tasks[i].name, timeout.count(), abandoned_counter);
  }
  result.error = shared->error;
  return result;
}

}  // namespace gcpstream::connector
