#ifndef GCPSTREAM_TESTS_SUPPORT_MANUAL_SCHEDULER_H_
#define GCPSTREAM_TESTS_SUPPORT_MANUAL_SCHEDULER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "gcpstream/util/scheduler.h"

namespace gcpstream::testing {

// A util::Scheduler whose clock moves only when the test says so: run_next() jumps to the
// earliest pending callback and runs it, so a budget of minutes is checked in milliseconds and
// every instant it observes is exact. A jump is bounded by a horizon: a callback due further
// ahead (a periodic keep-alive) waits, so the clock cannot run away while the code under test
// is between two steps on another thread. The clock starts at an arbitrary instant: measure
// from an event of the code under test. Callbacks run on the thread that calls run_next(),
// never under the scheduler's lock (they may schedule more). Thread-safe.
class ManualScheduler final : public util::Scheduler {
 public:
  Time now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }

  std::shared_ptr<util::TimerHandle> schedule(Time when, std::function<void()> fire) override {
    auto entry = std::make_shared<Entry>();
    entry->fire = std::move(fire);
    {
      std::lock_guard lock(mu_);
      queue_.emplace(std::make_pair(when, next_sequence_++), entry);
    }
    cv_.notify_all();
    return entry;
  }

  // Waits up to `real_wait` (wall-clock time) for a callback due within `horizon` of the
  // clock, then moves the clock to its due time (never backwards) and runs it. Cancelled
  // callbacks are dropped without running. False when none was due within `real_wait`.
  bool run_next(std::chrono::milliseconds real_wait, std::chrono::milliseconds horizon) {
    std::shared_ptr<Entry> entry;
    {
      std::unique_lock lock(mu_);
      for (;;) {
        if (!cv_.wait_for(lock, real_wait, [&] {
              return !queue_.empty() && queue_.begin()->first.first <= now_ + horizon;
            })) {
          return false;
        }
        auto first = queue_.begin();
        const Time due = first->first.first;
        entry = std::move(first->second);
        queue_.erase(first);
        if (entry->cancelled.load()) continue;  // dropped: the clock does not move for it
        if (due > now_) now_ = due;
        break;
      }
    }
    entry->fire();
    return true;
  }

  // Callbacks not yet run (cancelled ones included until run_next drops them).
  std::size_t pending() const {
    std::lock_guard lock(mu_);
    return queue_.size();
  }

 private:
  struct Entry final : util::TimerHandle {
    std::function<void()> fire;
    std::atomic<bool> cancelled{false};
    void cancel() override { cancelled.store(true); }
  };
  static constexpr Time kStart = Time(std::chrono::hours(1));

  mutable std::mutex mu_;
  std::condition_variable cv_;
  Time now_ = kStart;
  std::uint64_t next_sequence_ = 0;
  // By due time, then by scheduling order.
  std::map<std::pair<Time, std::uint64_t>, std::shared_ptr<Entry>> queue_;
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_MANUAL_SCHEDULER_H_
