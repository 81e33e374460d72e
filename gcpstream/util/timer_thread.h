#ifndef GCPSTREAM_UTIL_TIMER_THREAD_H_
#define GCPSTREAM_UTIL_TIMER_THREAD_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace gcpstream::util {

// A cancellable scheduled callback.
class TimerHandle {
 public:
  virtual ~TimerHandle() = default;
  // Best effort: a callback already running is not stopped.
  virtual void cancel() = 0;
};

// One thread that runs scheduled callbacks at their due time. Callbacks must be cheap and must
// not block (they typically post work elsewhere: a mail, a task). Thread-safe.
class TimerThread {
 public:
  using Time = std::chrono::steady_clock::time_point;
  TimerThread();
  ~TimerThread();  // stops the thread; pending callbacks are dropped

  std::shared_ptr<TimerHandle> schedule(Time when, std::function<void()> fire);

 private:
  struct Entry;
  struct Later {
    bool operator()(const std::shared_ptr<Entry>& a, const std::shared_ptr<Entry>& b) const;
  };
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<std::shared_ptr<Entry>, std::vector<std::shared_ptr<Entry>>, Later> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gcpstream::util

#endif  // GCPSTREAM_UTIL_TIMER_THREAD_H_
