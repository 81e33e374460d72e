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

#include "gcpstream/util/scheduler.h"

namespace gcpstream::util {

// The real-time Scheduler: one thread that runs scheduled callbacks at their due time. Callbacks
// must be cheap and must not block (they typically post work elsewhere: a mail, a task).
// Thread-safe.
//
// A callback may hold the last reference to the TimerThread's owner (a weak_ptr locked in the
// callback, say), so the TimerThread may be destroyed on its own thread: the destructor then
// detaches instead of joining, and the loop, which owns its state, ends after the callback.
class TimerThread final : public Scheduler {
 public:
  TimerThread();
  ~TimerThread() override;  // stops the thread; pending callbacks are dropped

  Time now() const override { return std::chrono::steady_clock::now(); }
  std::shared_ptr<TimerHandle> schedule(Time when, std::function<void()> fire) override;

 private:
  struct Entry;
  struct State;
  static void loop(std::shared_ptr<State> state);

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace gcpstream::util

#endif  // GCPSTREAM_UTIL_TIMER_THREAD_H_
