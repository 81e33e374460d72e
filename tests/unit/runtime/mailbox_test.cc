#include "gcpstream/runtime/mailbox.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "gcpstream/runtime/timer_service.h"

namespace gcpstream::runtime {
namespace {

using namespace std::chrono_literals;

TEST(MailboxTest, MailsRunInOrderBetweenDefaultActions) {
  MailboxProcessor processor;
  processor.bind_to_current_thread();
  auto executor = processor.executor(TaskMailbox::kTaskPriority);
  std::vector<int> order;
  int actions = 0;
  executor->execute([&] { order.push_back(1); return absl::OkStatus(); }, "one");
  executor->execute([&] { order.push_back(2); return absl::OkStatus(); }, "two");
  absl::Status s = processor.run([&]() -> absl::StatusOr<MailboxProcessor::ActionResult> {
    order.push_back(100 + actions);
    return ++actions == 2 ? MailboxProcessor::ActionResult::kEndOfInput
                          : MailboxProcessor::ActionResult::kMore;
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(order, (std::vector<int>{1, 2, 100, 101}));
}

TEST(MailboxTest, YieldRunsOnlyMailsOfItsPriorityOrHigher) {
  MailboxProcessor processor;
  processor.bind_to_current_thread();
  auto task = processor.executor(TaskMailbox::kTaskPriority);
  auto writer = processor.executor(3);
  bool task_mail_ran = false;
  bool done = false;
  task->execute([&] { task_mail_ran = true; return absl::OkStatus(); }, "checkpoint trigger");
  writer->execute([&] { done = true; return absl::OkStatus(); }, "completion");
  ASSERT_TRUE(writer->yield_until([&] { return done; }).ok());
  EXPECT_TRUE(done);
  EXPECT_FALSE(task_mail_ran) << "a subtask-level mail must not run inside an operator's yield";
  // It runs later, between records.
  auto letter = processor.mailbox().try_take(TaskMailbox::kTaskPriority);
  ASSERT_TRUE(letter.has_value());
  ASSERT_TRUE(processor.run_letter(*letter).ok());
  EXPECT_TRUE(task_mail_ran);
}

// The dashboard's back-pressure and idle shares come from these clocks: a yield that waits
// (an operator blocked on output) is back-pressured time, a suspended default action waiting
// for input is idle time, and a wait in progress already counts while it lasts.
TEST(MailboxTest, WaitsAreCountedAsIdleOrBackPressuredTimeWhileTheyLast) {
  MailboxProcessor processor;
  processor.bind_to_current_thread();
  auto executor = processor.executor(1);
  std::atomic<bool> released{false};
  std::atomic<std::int64_t> seen_during_wait_ms{0};
  std::thread other([&] {
    std::this_thread::sleep_for(150ms);
    seen_during_wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              processor.back_pressured_time())
                              .count();
    executor->execute([&] { released = true; return absl::OkStatus(); }, "space downstream");
  });
  ASSERT_TRUE(executor->yield_until([&] { return released.load(); }).ok());
  other.join();
  EXPECT_GE(seen_during_wait_ms.load(), 100) << "a wait in progress counts up to now";
  EXPECT_GE(processor.back_pressured_time(), 140ms);
  EXPECT_EQ(processor.idle_time(), 0ns);

  int actions = 0;
  std::thread input([&] {
    std::this_thread::sleep_for(100ms);
    processor.resume_default_action();
  });
  absl::Status s = processor.run([&]() -> absl::StatusOr<MailboxProcessor::ActionResult> {
    return ++actions == 1 ? MailboxProcessor::ActionResult::kNothingAvailable
                          : MailboxProcessor::ActionResult::kEndOfInput;
  });
  input.join();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_GE(processor.idle_time(), 90ms);
  EXPECT_LT(processor.back_pressured_time(), 1s) << "idle time is not back pressure";
}

TEST(MailboxTest, YieldWakesForAMailPostedFromAnotherThread) {
  MailboxProcessor processor;
  processor.bind_to_current_thread();
  auto executor = processor.executor(1);
  std::atomic<bool> done{false};
  std::thread completer([&] {
    std::this_thread::sleep_for(20ms);
    executor->execute([&] { done = true; return absl::OkStatus(); }, "grpc completion");
  });
  absl::Status s = executor->yield_until([&] { return done.load(); },
                                         std::chrono::steady_clock::now() + 5s);
  completer.join();
  EXPECT_TRUE(s.ok()) << s;
}

TEST(MailboxTest, YieldReturnsCancelledWhenTheSubtaskIsCancelled) {
  MailboxProcessor processor;
  processor.bind_to_current_thread();
  auto executor = processor.executor(1);
  std::thread canceller([&] {
    std::this_thread::sleep_for(20ms);
    processor.cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = executor->yield_until([] { return false; },
                                         std::chrono::steady_clock::now() + 5s);
  canceller.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST(MailboxTest, YieldHonoursItsDeadline) {
  MailboxProcessor processor;
  processor.bind_to_current_thread();
  auto executor = processor.executor(1);
  absl::Status s = executor->yield_until([] { return false; },
                                         std::chrono::steady_clock::now() + 30ms);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
}

TEST(MailboxTest, AFailingMailFailsTheProcessorAndTheYield) {
  MailboxProcessor processor;
  processor.bind_to_current_thread();
  auto executor = processor.executor(1);
  executor->execute([] { return absl::UnavailableError("captured on a client thread"); },
                    "completion");
  absl::Status s = executor->yield_until([] { return false; },
                                         std::chrono::steady_clock::now() + 5s);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(processor.failure().code(), absl::StatusCode::kUnavailable);
}

TEST(MailboxTest, SuspendedDefaultActionResumesWhenSignalled) {
  MailboxProcessor processor;
  processor.bind_to_current_thread();
  std::atomic<int> available{0};
  int calls = 0;
  std::thread producer([&] {
    for (int i = 0; i < 3; ++i) {
      std::this_thread::sleep_for(5ms);
      available.fetch_add(1);
      processor.resume_default_action();
    }
  });
  int consumed = 0;
  absl::Status s = processor.run([&]() -> absl::StatusOr<MailboxProcessor::ActionResult> {
    ++calls;
    if (available.load() > consumed) {
      ++consumed;
      return consumed == 3 ? MailboxProcessor::ActionResult::kEndOfInput
                           : MailboxProcessor::ActionResult::kMore;
    }
    return MailboxProcessor::ActionResult::kNothingAvailable;
  });
  producer.join();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(consumed, 3);
  EXPECT_LT(calls, 50) << "a suspended action must not spin";
}

TEST(MailboxTest, TimersFireAsMailsInOrder) {
  MailboxProcessor processor;
  processor.bind_to_current_thread();
  TimerThread timers;
  MailboxTimerService service(&timers, processor.shared_mailbox(), 1);
  auto executor = processor.executor(1);
  std::vector<int> fired;
  const auto now = std::chrono::steady_clock::now();
  service.register_timer(now + 30ms, [&] { fired.push_back(2); return absl::OkStatus(); });
  service.register_timer(now + 10ms, [&] { fired.push_back(1); return absl::OkStatus(); });
  auto cancelled =
      service.register_timer(now + 20ms, [&] { fired.push_back(99); return absl::OkStatus(); });
  cancelled->cancel();
  ASSERT_TRUE(executor->yield_until([&] { return fired.size() == 2; }, now + 5s).ok());
  EXPECT_EQ(fired, (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace gcpstream::runtime
