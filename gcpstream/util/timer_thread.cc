#include "gcpstream/util/timer_thread.h"

#include <atomic>

namespace gcpstream::util {

struct TimerThread::Entry final : TimerHandle {
  Time when;
  std::function<void()> fire;
  std::atomic<bool> cancelled{false};
  std::uint64_t sequence = 0;
  void cancel() override { cancelled.store(true, std::memory_order_release); }
};

bool TimerThread::Later::operator()(const std::shared_ptr<Entry>& a,
                                    const std::shared_ptr<Entry>& b) const {
  if (a->when != b->when) return a->when > b->when;
  return a->sequence > b->sequence;
}

TimerThread::TimerThread() : thread_([this] { loop(); }) {}

TimerThread::~TimerThread() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::shared_ptr<TimerHandle> TimerThread::schedule(Time when, std::function<void()> fire) {
  static std::atomic<std::uint64_t> sequence{0};
  auto entry = std::make_shared<Entry>();
  entry->when = when;
  entry->fire = std::move(fire);
  entry->sequence = sequence.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(mu_);
    queue_.push(entry);
  }
  cv_.notify_all();
  return entry;
}

void TimerThread::loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (queue_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto next = queue_.top();
    if (next->when > std::chrono::steady_clock::now()) {
      cv_.wait_until(lock, next->when);
      continue;
    }
    queue_.pop();
    if (next->cancelled.load(std::memory_order_acquire)) continue;
    lock.unlock();
    next->fire();
    lock.lock();
  }
}

}  // namespace gcpstream::util
