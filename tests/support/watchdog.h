#ifndef GCPSTREAM_TESTS_SUPPORT_WATCHDOG_H_
#define GCPSTREAM_TESTS_SUPPORT_WATCHDOG_H_

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace gcpstream::testing {

// Ends a test's waits at a deadline: past it, `on_expire` runs on the watchdog's thread (it
// should answer whatever is still pending, so that a broken wait returns instead of hanging)
// and the test fails with what `on_expire` says had arrived. Destroying the watchdog before the
// deadline disarms it.
class Watchdog {
 public:
  Watchdog(std::chrono::milliseconds deadline, std::function<std::string()> on_expire)
      : thread_([this, deadline, on_expire = std::move(on_expire)] {
          std::unique_lock lock(mu_);
          if (cv_.wait_for(lock, deadline, [&] { return stopped_; })) return;
          const std::string seen = on_expire();
          ADD_FAILURE() << "the test's deadline passed; " << seen;
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_WATCHDOG_H_
