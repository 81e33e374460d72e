// The async I/O operator (AsyncDataStream): ordering, watermarks, capacity, timeouts, retries,
// checkpointed in-flight inputs. Semantics follow Flink's AsyncDataStream documentation
// ("Asynchronous I/O for External Data Access": ordered / unordered result order, watermarks as
// barriers in unordered mode, capacity back-pressure, timeout handler, retry strategies).
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gcpstream/runtime/async_data_stream.h"
#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/metric_registry.h"
#include "gcpstream/runtime/timer_service.h"
#include "gcpstream/util/timer_thread.h"
#include "tests/support/transactional_test_sink.h"

namespace gcpstream {
namespace {

using namespace std::chrono_literals;
using runtime::AsyncOutputMode;
using runtime::AsyncWaitConfig;
using runtime::AsyncWaitOperator;

// Records what reaches the operator's output: "r:<value>@<ts>" and "w:<watermark>".
class RecordingOutput final : public runtime::Output<std::string> {
 public:
  absl::Status collect(StreamRecord<std::string>&& record) override {
    events.push_back("r:" + record.value + "@" + std::to_string(record.timestamp_ms));
    return absl::OkStatus();
  }
  absl::Status emit_watermark(std::int64_t watermark_ms) override {
    events.push_back("w:" + std::to_string(watermark_ms));
    return absl::OkStatus();
  }
  absl::Status emit_watermark_status(bool) override { return absl::OkStatus(); }
  std::vector<std::string> records() const {
    std::vector<std::string> out;
    for (const auto& e : events) {
      if (e.rfind("r:", 0) == 0) out.push_back(e);
    }
    return out;
  }
  std::vector<std::string> events;
};

// Holds every call's future; the test completes them, from any thread, when it wants.
struct Calls {
  std::mutex mu;
  std::map<int, std::vector<ResultFuture<std::string>>> futures;  // by input value
  std::vector<int> timeouts;
  int opened = 0;
  int closed = 0;
  ResultFuture<std::string> take(int input, int attempt = 0) {
    std::lock_guard lock(mu);
    return futures.at(input).at(static_cast<std::size_t>(attempt));
  }
  std::size_t calls(int input) {
    std::lock_guard lock(mu);
    auto it = futures.find(input);
    return it == futures.end() ? 0 : it->second.size();
  }
};

class HeldFunction : public AsyncFunction<int, std::string> {
 public:
  explicit HeldFunction(std::shared_ptr<Calls> calls, bool fallback_on_timeout = false)
      : calls_(std::move(calls)), fallback_(fallback_on_timeout) {}
  absl::Status open(const AsyncFunctionContext&) override {
    std::lock_guard lock(calls_->mu);
    ++calls_->opened;
    return absl::OkStatus();
  }
  absl::Status close() override {
    std::lock_guard lock(calls_->mu);
    ++calls_->closed;
    return absl::OkStatus();
  }
  void async_invoke(const int& input, ResultFuture<std::string> result) override {
    std::lock_guard lock(calls_->mu);
    calls_->futures[input].push_back(std::move(result));
  }
  void timeout(const int& input, ResultFuture<std::string> result) override {
    {
      std::lock_guard lock(calls_->mu);
      calls_->timeouts.push_back(input);
    }
    if (fallback_) {
      result.complete({"fallback-" + std::to_string(input)});
    } else {
      AsyncFunction::timeout(input, std::move(result));
    }
  }

 private:
  std::shared_ptr<Calls> calls_;
  bool fallback_;
};

// One operator on a mailbox driven by the test thread.
class Harness {
 public:
  Harness(AsyncWaitConfig config, AsyncRetryStrategy<std::string> retry = {},
          bool fallback_on_timeout = false, std::shared_ptr<Calls> calls = nullptr)
      : calls_(calls ? std::move(calls) : std::make_shared<Calls>()) {
    mailbox_.bind_to_current_thread();
    executor_ = mailbox_.executor(1);
    timers_ = std::make_unique<runtime::MailboxTimerService>(&timer_thread_,
                                                             mailbox_.shared_mailbox(), 1);
    ctx_.operator_name = "Async: test";
    ctx_.mailbox_executor = executor_.get();
    ctx_.mailbox = mailbox_.shared_mailbox();
    ctx_.priority = 1;
    ctx_.timer_service = timers_.get();
    ctx_.metric_group = &registry_.group({{"operator", "async"}});
    op_ = std::make_unique<AsyncWaitOperator<int, std::string>>(
        std::make_unique<HeldFunction>(calls_, fallback_on_timeout), config, std::move(retry),
        &out_, ctx_);
  }
  ~Harness() {
    if (op_) (void)op_->close();
  }

  AsyncWaitOperator<int, std::string>& op() { return *op_; }
  Calls& calls() { return *calls_; }
  std::shared_ptr<Calls> shared_calls() { return calls_; }
  RecordingOutput& out() { return out_; }
  MailboxExecutor& executor() { return *executor_; }
  std::int64_t counter(const std::string& name) { return ctx_.metric_group->counter(name).get(); }

  // Runs mails until `done`, failing the test (naming what arrived) at the deadline.
  absl::Status run_until(std::function<bool()> done, std::chrono::milliseconds timeout = 5s) {
    absl::Status s =
        executor_->yield_until([&] { return done(); }, std::chrono::steady_clock::now() + timeout);
    if (absl::IsDeadlineExceeded(s)) {
      ADD_FAILURE() << "timed out; output so far: " << ::testing::PrintToString(out_.events);
    }
    return s;
  }
  // Runs mails until one fails (or the deadline): the failure an input caused.
  absl::Status run_until_failure(std::chrono::milliseconds timeout = 5s) {
    return executor_->yield_until([] { return false; }, std::chrono::steady_clock::now() + timeout);
  }
  // Runs whatever mail is queued now (completions posted before the call).
  void drain() {
    for (int i = 0; i < 1000; ++i) {
      auto ran = executor_->try_yield();
      if (!ran.ok() || !*ran) return;
    }
  }

 private:
  std::shared_ptr<Calls> calls_;
  runtime::MailboxProcessor mailbox_;
  std::unique_ptr<MailboxExecutor> executor_;
  util::TimerThread timer_thread_;
  std::unique_ptr<runtime::MailboxTimerService> timers_;
  runtime::MetricRegistry registry_;
  runtime::OperatorContext ctx_;
  RecordingOutput out_;
  std::unique_ptr<AsyncWaitOperator<int, std::string>> op_;
};

StreamRecord<int> Rec(int v) { return StreamRecord<int>{v, 1000 + v}; }

TEST(AsyncWaitOperatorTest, OrderedModeEmitsInInputOrderWhateverTheCompletionOrder) {
  Harness h({AsyncOutputMode::kOrdered, 0ms, 10});
  ASSERT_TRUE(h.op().open().ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(h.op().collect(Rec(i)).ok());
  h.calls().take(2).complete({"c"});
  h.calls().take(1).complete({"b1", "b2"});
  h.drain();
  EXPECT_TRUE(h.out().events.empty()) << "input 0 holds the others back";
  h.calls().take(0).complete({"a"});
  ASSERT_TRUE(h.run_until([&] { return h.out().events.size() == 4; }).ok());
  EXPECT_EQ(h.out().events,
            (std::vector<std::string>{"r:a@1000", "r:b1@1001", "r:b2@1001", "r:c@1002"}));
  EXPECT_EQ(h.op().queued(), 0u);
}

TEST(AsyncWaitOperatorTest, UnorderedModeEmitsOnCompletionButNeverAcrossAWatermark) {
  Harness h({AsyncOutputMode::kUnordered, 0ms, 10});
  ASSERT_TRUE(h.op().open().ok());
  ASSERT_TRUE(h.op().collect(Rec(0)).ok());
  ASSERT_TRUE(h.op().collect(Rec(1)).ok());
  ASSERT_TRUE(h.op().emit_watermark(500).ok());
  ASSERT_TRUE(h.op().collect(Rec(2)).ok());
  h.calls().take(1).complete({"b"});
  ASSERT_TRUE(h.run_until([&] { return h.out().events.size() == 1; }).ok());
  EXPECT_EQ(h.out().events, (std::vector<std::string>{"r:b@1001"})) << "completion order";
  h.calls().take(2).complete({"c"});
  h.drain();
  EXPECT_EQ(h.out().events.size(), 1u) << "input 2 came after the watermark: it waits for it";
  h.calls().take(0).complete({"a"});
  ASSERT_TRUE(h.run_until([&] { return h.out().events.size() == 4; }).ok());
  EXPECT_EQ(h.out().events,
            (std::vector<std::string>{"r:b@1001", "r:a@1000", "w:500", "r:c@1002"}));
}

TEST(AsyncWaitOperatorTest, AWatermarkWithNothingInFlightPassesAtOnce) {
  Harness h({AsyncOutputMode::kOrdered, 0ms, 10});
  ASSERT_TRUE(h.op().open().ok());
  ASSERT_TRUE(h.op().emit_watermark(7).ok());
  EXPECT_EQ(h.out().events, (std::vector<std::string>{"w:7"}));
}

TEST(AsyncWaitOperatorTest, AtCapacityCollectWaitsForAnInputToLeave) {
  Harness h({AsyncOutputMode::kUnordered, 0ms, 2});
  ASSERT_TRUE(h.op().open().ok());
  ASSERT_TRUE(h.op().collect(Rec(0)).ok());
  ASSERT_TRUE(h.op().collect(Rec(1)).ok());
  std::atomic<bool> third_returned{false};
  // Completes input 0 only after the third collect() has been blocked for a while.
  auto future = h.calls().take(0);
  std::thread completer([&] {
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(third_returned.load()) << "collect() did not wait at capacity";
    future.complete({"a"});
  });
  ASSERT_TRUE(h.op().collect(Rec(2)).ok());
  third_returned = true;
  completer.join();
  EXPECT_EQ(h.out().records(), (std::vector<std::string>{"r:a@1000"}));
  EXPECT_EQ(h.calls().calls(2), 1u);
  EXPECT_EQ(h.op().queued(), 2u);
}

TEST(AsyncWaitOperatorTest, AnExceptionalCompletionFailsWithItsCodeAndTheOperatorName) {
  Harness h({AsyncOutputMode::kOrdered, 0ms, 10});
  ASSERT_TRUE(h.op().open().ok());
  ASSERT_TRUE(h.op().collect(Rec(0)).ok());
  h.calls().take(0).complete_exceptionally(absl::PermissionDeniedError("no access to t"));
  absl::Status s = h.run_until_failure(2s);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find("Async: test"), std::string::npos) << s;
  EXPECT_NE(s.message().find("no access to t"), std::string::npos) << s;
  EXPECT_TRUE(h.out().events.empty());
}

TEST(AsyncWaitOperatorTest, TheDefaultTimeoutHandlerFailsWithDeadlineExceeded) {
  Harness h({AsyncOutputMode::kOrdered, 50ms, 10});
  ASSERT_TRUE(h.op().open().ok());
  ASSERT_TRUE(h.op().collect(Rec(0)).ok());
  absl::Status s = h.run_until_failure(5s);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_NE(s.message().find("operator timeout"), std::string::npos) << s;
  EXPECT_EQ(h.counter("asyncTimeouts"), 1);
}

TEST(AsyncWaitOperatorTest, ATimeoutHandlerDecidesAndALateAnswerIsDropped) {
  Harness h({AsyncOutputMode::kOrdered, 50ms, 10}, {}, /*fallback_on_timeout=*/true);
  ASSERT_TRUE(h.op().open().ok());
  ASSERT_TRUE(h.op().collect(Rec(0)).ok());
  ASSERT_TRUE(h.op().collect(Rec(1)).ok());
  h.calls().take(1).complete({"b"});
  ASSERT_TRUE(h.run_until([&] { return h.out().events.size() == 2; }).ok());
  EXPECT_EQ(h.out().records(), (std::vector<std::string>{"r:fallback-0@1000", "r:b@1001"}));
  h.calls().take(0).complete({"late"});  // the attempt the timeout abandoned
  h.drain();
  EXPECT_EQ(h.out().events.size(), 2u) << ::testing::PrintToString(h.out().events);
  std::lock_guard lock(h.calls().mu);
  EXPECT_EQ(h.calls().timeouts, std::vector<int>{0}) << "input 1 completed in time";
}

TEST(AsyncWaitOperatorTest, RetriesAcceptedErrorsAndResultsThenGivesUpAfterMaxRetries) {
  auto retry = AsyncRetryStrategy<std::string>::fixed_delay(2, 10ms)
                   .if_error([](const absl::Status& s) { return absl::IsUnavailable(s); })
                   .if_result(AsyncRetryStrategy<std::string>::EmptyResult);
  Harness h({AsyncOutputMode::kOrdered, 0ms, 10}, retry);
  ASSERT_TRUE(h.op().open().ok());
  ASSERT_TRUE(h.op().collect(Rec(0)).ok());
  ASSERT_TRUE(h.op().collect(Rec(1)).ok());
  // Input 0: UNAVAILABLE, then empty, then an answer: two retries, emitted.
  h.calls().take(0, 0).complete_exceptionally(absl::UnavailableError("try again"));
  ASSERT_TRUE(h.run_until([&] { return h.calls().calls(0) == 2; }).ok());
  h.calls().take(0, 1).complete({});
  ASSERT_TRUE(h.run_until([&] { return h.calls().calls(0) == 3; }).ok());
  h.calls().take(0, 2).complete({"a"});
  ASSERT_TRUE(h.run_until([&] { return h.out().events.size() == 1; }).ok());
  EXPECT_EQ(h.out().records(), std::vector<std::string>{"r:a@1000"});
  // Input 1: a refused error is not retried.
  h.calls().take(1, 0).complete_exceptionally(absl::InvalidArgumentError("bad row"));
  absl::Status s = h.run_until_failure(2s);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(h.calls().calls(1), 1u);
  EXPECT_EQ(h.counter("asyncRetries"), 2);
}

TEST(AsyncWaitOperatorTest, RetriesStopAtTheLimitAndTheLastErrorFailsNamingTheAttempts) {
  auto retry = AsyncRetryStrategy<std::string>::fixed_delay(2, 1ms).if_error(
      AsyncRetryStrategy<std::string>::AnyError);
  Harness h({AsyncOutputMode::kUnordered, 0ms, 10}, retry);
  ASSERT_TRUE(h.op().open().ok());
  ASSERT_TRUE(h.op().collect(Rec(0)).ok());
  for (int attempt = 0; attempt < 2; ++attempt) {
    h.calls().take(0, attempt).complete_exceptionally(absl::UnavailableError("down"));
    ASSERT_TRUE(h.run_until([&] { return h.calls().calls(0) == attempt + 2u; }).ok());
  }
  h.calls().take(0, 2).complete_exceptionally(absl::UnavailableError("still down"));
  absl::Status s = h.run_until_failure(2s);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("after 3 calls"), std::string::npos) << s;
}

TEST(AsyncWaitOperatorTest, TheTimeoutSpansRetriesAndStopsAPendingBackoff) {
  auto retry = AsyncRetryStrategy<std::string>::fixed_delay(5, 10s).if_error(
      AsyncRetryStrategy<std::string>::AnyError);
  Harness h({AsyncOutputMode::kOrdered, 100ms, 10}, retry, /*fallback_on_timeout=*/true);
  ASSERT_TRUE(h.op().open().ok());
  ASSERT_TRUE(h.op().collect(Rec(0)).ok());
  h.calls().take(0).complete_exceptionally(absl::UnavailableError("down"));
  // The 10 s backoff is cut by the 100 ms operator timeout: the handler decides, no retry.
  ASSERT_TRUE(h.run_until([&] { return h.out().events.size() == 1; }).ok());
  EXPECT_EQ(h.out().records(), std::vector<std::string>{"r:fallback-0@1000"});
  EXPECT_EQ(h.calls().calls(0), 1u);
}

TEST(AsyncWaitOperatorTest, BackoffGrowsByTheMultiplierUpToTheCap) {
  auto s = AsyncRetryStrategy<int>::exponential_backoff(5, 100ms, 350ms, 2.0);
  EXPECT_EQ(s.backoff(1), 100ms);
  EXPECT_EQ(s.backoff(2), 200ms);
  EXPECT_EQ(s.backoff(3), 350ms);
  EXPECT_EQ(s.backoff(5), 350ms);
  EXPECT_TRUE(s.can_retry(4));
  EXPECT_FALSE(s.can_retry(5));
  EXPECT_FALSE(AsyncRetryStrategy<int>().can_retry(0)) << "no retries by default";
}

TEST(AsyncWaitOperatorTest, InFlightInputsAreCheckpointedAndCalledAgainOnRestore) {
  runtime::OperatorStateWriter state;
  {
    Harness h({AsyncOutputMode::kOrdered, 0ms, 10});
    ASSERT_TRUE(h.op().open().ok());
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(h.op().collect(Rec(i)).ok());
    h.calls().take(0).complete({"a"});
    h.calls().take(2).complete({"c"});  // completed, not emitted (ordered): still in the state
    ASSERT_TRUE(h.run_until([&] { return h.out().events.size() == 1; }).ok());
    ASSERT_TRUE(h.op().snapshot_state(1, state).ok());
  }
  ASSERT_EQ(state.lists().at(runtime::kAsyncInputsList).size(), 3u);
  Harness restored({AsyncOutputMode::kOrdered, 0ms, 10});
  ASSERT_TRUE(restored.op().initialize_state(runtime::OperatorStateReader(state.lists())).ok());
  ASSERT_TRUE(restored.op().open().ok());
  EXPECT_EQ(restored.calls().calls(0), 0u);
  for (int i = 1; i < 4; ++i) {
    ASSERT_EQ(restored.calls().calls(i), 1u) << "input " << i << " was not called again";
    restored.calls().take(i).complete({"v" + std::to_string(i)});
  }
  ASSERT_TRUE(restored.run_until([&] { return restored.out().events.size() == 3; }).ok());
  EXPECT_EQ(restored.out().records(),
            (std::vector<std::string>{"r:v1@1001", "r:v2@1002", "r:v3@1003"}))
      << "timestamps survive the checkpoint";
}

TEST(AsyncWaitOperatorTest, NothingLeavesBetweenTheBarrierAndTheSnapshot) {
  Harness h({AsyncOutputMode::kUnordered, 0ms, 10});
  ASSERT_TRUE(h.op().open().ok());
  ASSERT_TRUE(h.op().collect(Rec(0)).ok());
  ASSERT_TRUE(h.op().collect(Rec(1)).ok());
  ASSERT_TRUE(h.op().prepare_snapshot_pre_barrier(1).ok());
  // Completions that run while the barrier is being sent (another output yielding).
  h.calls().take(0).complete({"a"});
  h.drain();
  EXPECT_TRUE(h.out().events.empty()) << "a result would have followed the barrier";
  runtime::OperatorStateWriter state;
  ASSERT_TRUE(h.op().snapshot_state(1, state).ok());
  EXPECT_EQ(state.lists().at(runtime::kAsyncInputsList).size(), 2u)
      << "the completed input is in the snapshot: its result was not sent before the barrier";
  ASSERT_TRUE(h.run_until([&] { return h.out().events.size() == 1; }).ok());
  EXPECT_EQ(h.out().records(), std::vector<std::string>{"r:a@1000"});
}

struct Plain {
  int v = 0;
};
class PlainFunction : public AsyncFunction<Plain, std::string> {
 public:
  void async_invoke(const Plain&, ResultFuture<std::string> result) override {
    result.complete({});
  }
};

TEST(AsyncWaitOperatorTest, AnInputTypeWithoutACodecIsRefusedWhenTheJobCheckpoints) {
  runtime::MailboxProcessor mailbox;
  mailbox.bind_to_current_thread();
  auto executor = mailbox.executor(1);
  runtime::MetricRegistry registry;
  runtime::OperatorContext ctx;
  ctx.operator_name = "Async: plain";
  ctx.mailbox_executor = executor.get();
  ctx.mailbox = mailbox.shared_mailbox();
  ctx.metric_group = &registry.group({{"operator", "plain"}});
  RecordingOutput out;
  AsyncWaitConfig config{AsyncOutputMode::kOrdered, 0ms, 10};
  config.checkpointing = true;
  AsyncWaitOperator<Plain, std::string> op(std::make_unique<PlainFunction>(), config, {}, &out,
                                           ctx);
  absl::Status s = op.open();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("ValueCodec"), std::string::npos) << s;
  config.checkpointing = false;
  AsyncWaitOperator<Plain, std::string> fine(std::make_unique<PlainFunction>(), config, {}, &out,
                                             ctx);
  EXPECT_TRUE(fine.open().ok()) << "without checkpoints nothing needs encoding";
  (void)fine.close();
}

TEST(AsyncWaitOperatorTest, AnUnknownStateVersionFailsTheRestoreClearly) {
  runtime::OperatorStateWriter state;
  state.add(runtime::kAsyncInputsList, 99, "x");
  Harness h({AsyncOutputMode::kOrdered, 0ms, 10});
  absl::Status s = h.op().initialize_state(runtime::OperatorStateReader(state.lists()));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("99"), std::string::npos) << s;
}

TEST(AsyncWaitOperatorTest, FinishWaitsForEveryInputAndCloseClosesTheFunctionOnce) {
  auto calls = std::make_shared<Calls>();
  {
    Harness h({AsyncOutputMode::kUnordered, 0ms, 10}, {}, false, calls);
    ASSERT_TRUE(h.op().open().ok());
    ASSERT_TRUE(h.op().collect(Rec(0)).ok());
    auto future = h.calls().take(0);
    std::thread completer([future]() mutable {
      std::this_thread::sleep_for(50ms);
      future.complete({"a"});
    });
    ASSERT_TRUE(h.op().finish().ok());
    completer.join();
    EXPECT_EQ(h.out().records(), std::vector<std::string>{"r:a@1000"});
    ASSERT_TRUE(h.op().close().ok());
  }
  std::lock_guard lock(calls->mu);
  EXPECT_EQ(calls->opened, 1);
  EXPECT_EQ(calls->closed, 1);
}

TEST(AsyncWaitOperatorTest, AnAnswerAfterTheOperatorIsGoneIsHarmless) {
  auto calls = std::make_shared<Calls>();
  ResultFuture<std::string> orphan(std::weak_ptr<internal::AsyncResultSink<std::string>>{}, 0, 0);
  {
    Harness h({AsyncOutputMode::kUnordered, 0ms, 10}, {}, false, calls);
    ASSERT_TRUE(h.op().open().ok());
    ASSERT_TRUE(h.op().collect(Rec(0)).ok());
    orphan = h.calls().take(0);
  }
  orphan.complete({"after the end"});  // must neither crash nor reach anything
  EXPECT_TRUE(orphan.done());
}

// Threads DelayedDouble started that have not finished yet.
std::atomic<int> g_delayed_threads{0};

// A function completing on its own threads after a random delay: the shape of a real client.
class DelayedDouble : public AsyncFunction<std::int64_t, std::int64_t> {
 public:
  void async_invoke(const std::int64_t& input, ResultFuture<std::int64_t> result) override {
    const auto delay = std::chrono::microseconds((input * 7919) % 500);
    g_delayed_threads.fetch_add(1);
    std::thread([input, delay, result]() mutable {
      std::this_thread::sleep_for(delay);
      result.complete({input * 2});
      g_delayed_threads.fetch_sub(1);
    }).detach();
  }
};

// Waits (bounded) for the threads of abandoned attempts, so none outlives the test.
void AwaitDelayedThreads() {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (g_delayed_threads.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(g_delayed_threads.load(), 0) << "completion threads still running";
}

std::string TempDir(const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / fmt::format("gcpstream-async-{}-{}", name, getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(AsyncDataStreamTest, OrderedWaitKeepsEachSubtasksOrderInAJob) {
  StreamExecutionEnvironment env;
  env.set_parallelism(1);
  auto sink = std::make_shared<CollectSink<std::int64_t>>();
  auto numbers = env.from_source(std::make_shared<NumberSequenceSource>(0, 1999, 1),
                                 WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers");
  AsyncDataStream::ordered_wait(numbers, DelayedDouble{}, 10s, 16, "double")
      .sink_to(sink, "collect");
  auto result = env.execute("ordered");
  ASSERT_TRUE(result.status.ok()) << result.status;
  auto values = sink->collected()->snapshot();
  ASSERT_EQ(values.size(), 2000u);
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(values[i], static_cast<std::int64_t>(2 * i)) << "at position " << i;
  }
  AwaitDelayedThreads();
}

// Restarts from checkpoints with inputs in flight: every in-flight input is in the state and
// called again, so a transactional sink sees every result exactly once.
TEST(AsyncDataStreamTest, ARestartFromACheckpointLosesNoInFlightInput) {
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  env.enable_checkpointing(15ms);
  env.config().checkpointing.directory = TempDir("restart");
  env.config().restart_strategy.kind = runtime::RestartStrategyKind::kFixedDelay;
  env.config().restart_strategy.max_attempts = 3;
  env.config().restart_strategy.delay = 10ms;
  auto failed = std::make_shared<std::atomic<int>>(0);
  auto sink = std::make_shared<testing::TransactionalTestSink>();
  auto numbers = env.from_source(std::make_shared<NumberSequenceSource>(0, 19999, 4),
                                 WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers");
  auto doubled = AsyncDataStream::unordered_wait(numbers, DelayedDouble{}, 10s, 32, "double");
  doubled
      .map(
          [failed](std::int64_t v) {
            if ((v == 2 * 9000 || v == 2 * 16000) && failed->fetch_add(1) < 2) {
              throw std::runtime_error("injected failure");
            }
            return v / 2;
          },
          "halve and fail twice")
      .sink_to(sink, "tx");
  auto result = env.execute("async-restart");
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(result.restarts, 2);
  auto values = sink->destination()->snapshot();
  std::map<std::int64_t, int> counts;
  for (auto v : values) counts[v]++;
  std::int64_t missing = 0, doubled_count = 0;
  for (std::int64_t i = 0; i < 20000; ++i) {
    if (counts[i] == 0) ++missing;
    if (counts[i] > 1) ++doubled_count;
  }
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(doubled_count, 0);
  AwaitDelayedThreads();
}

}  // namespace
}  // namespace gcpstream
