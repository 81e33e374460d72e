#include "gcpstream/runtime/timer_service.h"

#include <atomic>

namespace gcpstream::runtime {

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
    std::shared_ptr<util::TimerHandle> inner;
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
