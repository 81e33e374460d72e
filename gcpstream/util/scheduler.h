#ifndef GCPSTREAM_UTIL_SCHEDULER_H_
#define GCPSTREAM_UTIL_SCHEDULER_H_

#include <chrono>
#include <functional>
#include <memory>

namespace gcpstream::util {

// A cancellable scheduled callback.
class TimerHandle {
 public:
  virtual ~TimerHandle() = default;
  // Best effort: a callback already running is not stopped.
  virtual void cancel() = 0;
};

// A clock and the timers that run on it. Code that waits (retry backoffs, keep-alives, batch
// delays) reads the time and schedules through this seam, so a test can drive it with a clock
// it advances by hand (tests/support/manual_scheduler.h) and check the arithmetic of a budget
// without sleeping. The production implementation is TimerThread (steady_clock, one thread).
// Implementations are thread-safe.
class Scheduler {
 public:
  using Time = std::chrono::steady_clock::time_point;
  virtual ~Scheduler() = default;
  // The current time on this scheduler's clock.
  virtual Time now() const = 0;
  // Runs `fire` once, at `when` on this clock or soon after (at once when it is already past).
  // Callbacks must be cheap and must not block; they may schedule further callbacks.
  virtual std::shared_ptr<TimerHandle> schedule(Time when, std::function<void()> fire) = 0;
};

}  // namespace gcpstream::util

#endif  // GCPSTREAM_UTIL_SCHEDULER_H_
