#ifndef GCPSTREAM_RUNTIME_TIMER_SERVICE_H_
#define GCPSTREAM_RUNTIME_TIMER_SERVICE_H_

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

#include "gcpstream/api/mailbox.h"
#include "gcpstream/runtime/mailbox.h"

namespace gcpstream::runtime {

// One thread that fires timers for every subtask of a job. A timer never runs user code on
// this thread: when due it posts the timer's callback as a mail to the owning subtask's
// mailbox. Thread-safe.
class TimerThread {
 public:
  TimerThread();
  ~TimerThread();  // stops the thread; pending timers are dropped

  // Calls `fire` on the timer thread at or after `when`, unless cancelled first. `fire` must be
  // cheap and must not block (it posts a mail).
  std::shared_ptr<ProcessingTimeService::Timer> schedule(SteadyTime when,
                                                        std::function<void()> fire);

 private:
  struct Entry;
  struct Later {
    bool operator()(const std::shared_ptr<Entry>& a, const std::shared_ptr<Entry>& b) const;
  };
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<std::shared_ptr<Entry>, std::vector<std::shared_ptr<Entry>>, Later> queue_;
  bool stop_ = false;
  std::thread thread_;
};

// The ProcessingTimeService a subtask's operators see: timers become mails at the operator's
// priority in that subtask's mailbox.
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
