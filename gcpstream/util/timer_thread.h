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
//
// A callback may hold the last reference to the TimerThread's owner (a weak_ptr locked in the
// callback, say), so the TimerThread may be destroyed on its own thread: the destructor then
// detaches instead of joining, and the loop, which owns its state, ends after the callback.
class TimerThread {
 public:
  using Time = std::chrono::steady_clock::time_point;
  TimerThread();
  ~TimerThread();  // stops the thread; pending callbacks are dropped

  std::shared_ptr<TimerHandle> schedule(Time when, std::function<void()> fire);

 private:
  struct Entry;
  struct State;
  static void loop(std::shared_ptr<State> state);

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace gcpstream::util

#endif  // GCPSTREAM_UTIL_TIMER_THREAD_H_
