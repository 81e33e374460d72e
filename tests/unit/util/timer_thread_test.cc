// TimerThread: due-time order, cancellation, and destruction from one of its own callbacks (a
// callback that holds the last reference to the timer's owner).
#include "gcpstream/util/timer_thread.h"

#include <gtest/gtest.h>

#include <future>

namespace gcpstream::util {
namespace {

using namespace std::chrono_literals;

TEST(TimerThreadTest, RunsCallbacksInDueOrderAndSkipsCancelledOnes) {
  TimerThread timers;
  std::mutex mu;
  std::vector<int> order;
  std::promise<void> done;
  const auto now = std::chrono::steady_clock::now();
  timers.schedule(now + 30ms, [&] {
    std::lock_guard lock(mu);
    order.push_back(3);
    done.set_value();
  });
  timers.schedule(now + 10ms, [&] {
    std::lock_guard lock(mu);
    order.push_back(1);
  });
  auto cancelled = timers.schedule(now + 20ms, [&] {
    std::lock_guard lock(mu);
    order.push_back(2);
  });
  cancelled->cancel();
  ASSERT_EQ(done.get_future().wait_for(5s), std::future_status::ready)
      << "the last timer never fired";
  std::lock_guard lock(mu);
  EXPECT_EQ(order, (std::vector<int>{1, 3}));
}

TEST(TimerThreadTest, CanBeDestroyedFromItsOwnCallback) {
  // The owner lives only in the callback's capture, as a batcher kept alive by a weak_ptr lock.
  struct Owner {
    std::shared_ptr<TimerThread> timers = std::make_shared<TimerThread>();
  };
  std::promise<void> destroyed;
  {
    auto owner = std::make_shared<Owner>();
    auto* timers = owner->timers.get();
    // Signals when the callback's captures are released.
    std::shared_ptr<void> signal(nullptr, [&destroyed](void*) { destroyed.set_value(); });
    timers->schedule(std::chrono::steady_clock::now() + 5ms,
                     [owner = std::move(owner), signal = std::move(signal)]() mutable {
                       owner.reset();  // drops the TimerThread's last reference here
                     });
  }
  ASSERT_EQ(destroyed.get_future().wait_for(5s), std::future_status::ready)
      << "the callback never ran or its captures were never released";
}

}  // namespace
}  // namespace gcpstream::util
