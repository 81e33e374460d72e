#ifndef GCPSTREAM_RUNTIME_TIMER_SERVICE_H_
#define GCPSTREAM_RUNTIME_TIMER_SERVICE_H_

#include <memory>

#include "gcpstream/api/mailbox.h"
#include "gcpstream/runtime/mailbox.h"
#include "gcpstream/util/timer_thread.h"

namespace gcpstream::runtime {

using util::TimerThread;

// The ProcessingTimeService a subtask's operators see: timers become mails at the operator's
// priority in that subtask's mailbox (the timer thread itself never runs operator code).
class MailboxTimerService final : public ProcessingTimeService {
 public:
  MailboxTimerService(TimerThread* thread, std::shared_ptr<TaskMailbox> mailbox, int priority)
      : thread_(thread), mailbox_(std::move(mailbox)), priority_(priority) {}

  SteadyTime now() const override { return std::chrono::steady_clock::now(); }
  std::shared_ptr<Timer> register_timer(SteadyTime when, Mail callback) override;

 private:
  TimerThread* thread_;
  std::shared_ptr<TaskMailbox> mailbox_;
  int priority_;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_TIMER_SERVICE_H_
