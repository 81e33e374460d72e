#include "gcpstream/runtime/timer_service.h"

#include <atomic>

namespace gcpstream::runtime {

struct TimerThread::Entry final : ProcessingTimeService::Timer {
  SteadyTime when;
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

std::shared_ptr<ProcessingTimeService::Timer> TimerThread::schedule(SteadyTime when,
                                                                   std::function<void()> fire) {
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

std::shared_ptr<ProcessingTimeService::Timer> MailboxTimerService::register_timer(
    SteadyTime when, Mail callback) {
  // The callback moves into a shared holder so the std::function stays copyable.
  auto holder = std::make_shared<Mail>(std::move(callback));
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  std::weak_ptr<TaskMailbox> weak = mailbox_;
  const int priority = priority_;
  auto timer = thread_->schedule(when, [weak, holder, priority, cancelled] {
    auto mailbox = weak.lock();
    if (!mailbox) return;
    mailbox->put({priority,
                  [holder, cancelled]() -> absl::Status {
                    if (cancelled->load(std::memory_order_acquire)) return absl::OkStatus();
                    return std::move(*holder)();
                  },
                  "processing-time timer"});
  });
  struct Handle final : Timer {
    std::shared_ptr<Timer> inner;
    std::shared_ptr<std::atomic<bool>> cancelled;
    void cancel() override {
      cancelled->store(true, std::memory_order_release);
      inner->cancel();
    }
  };
  auto handle = std::make_shared<Handle>();
  handle->inner = std::move(timer);
  handle->cancelled = std::move(cancelled);
  return handle;
}

}  // namespace gcpstream::runtime
