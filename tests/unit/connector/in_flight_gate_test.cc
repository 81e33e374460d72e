#include "gcpstream/connector/in_flight_gate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "tests/support/fake_contexts.h"

namespace gcpstream::connector {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

ProgressPolicy Policy(std::chrono::milliseconds warn,
                      std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
  ProgressPolicy p;
  p.connector = "Bigtable";
  p.completion = "mutation";
  p.stall_warning_interval = warn;
  p.progress_timeout = timeout;
  p.progress_timeout_option = "progress_timeout";
  return p;
}

TEST(InFlightGateTest, AdmitsBelowTheCapSoAnOversizedElementGoesThroughOnAnEmptyWriter) {
  testing::TestMailbox mb;
  InFlightGate gate(10, 100, Policy(1min), mb.executor());
  bool flushed = false;
  ASSERT_TRUE(gate.admit("write", [&] { flushed = true; }).ok());
  gate.acquire(5000);  // far above the byte cap
  EXPECT_FALSE(flushed) << "no wait, no flush";
  EXPECT_EQ(gate.bytes(), 5000);
}

TEST(InFlightGateTest, WaitsAtTheCountCapUntilACompletionMailReleases) {
  testing::TestMailbox mb;
  InFlightGate gate(2, 1 << 20, Policy(1min), mb.executor());
  gate.acquire(1);
  gate.acquire(1);
  int before_wait_calls = 0;
  std::thread completer([&] {
    std::this_thread::sleep_for(30ms);
    mb.executor().execute(
        [&] {
          gate.release(1);
          return absl::OkStatus();
        },
        "completion");
  });
  absl::Status s = gate.admit("write", [&] { ++before_wait_calls; });
  completer.join();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(before_wait_calls, 1) << "what a batcher holds is sent once before waiting";
  EXPECT_EQ(gate.count(), 1);
}

TEST(InFlightGateTest, TheByteCapBindsWithTheCountFarBelowItsOwn) {
  testing::TestMailbox mb;
  InFlightGate gate(1000, 100, Policy(1min, 50ms), mb.executor());
  gate.acquire(100);
  absl::Status s = gate.admit("write", [] {});
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << "1 of 1000 entries, yet at the cap";
}

TEST(InFlightGateTest, ProgressTimeoutFailsNamingTheOptionAndRestartsAtEachCompletion) {
  testing::TestMailbox mb;
  InFlightGate gate(10, 1 << 20, Policy(1min, 120ms), mb.executor());
  gate.acquire(1);
  gate.acquire(1);
  // A completion at 80 ms restarts the budget: the drain survives past 120 ms in total.
  std::thread completer([&] {
    std::this_thread::sleep_for(80ms);
    mb.executor().execute(
        [&] {
          gate.release(1);
          return absl::OkStatus();
        },
        "completion");
  });
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = gate.drain("flush");
  const auto took = std::chrono::steady_clock::now() - start;
  completer.join();
  ASSERT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("progress_timeout"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("1 in flight"));
  EXPECT_GE(took, 190ms) << "the completion at 80 ms restarted the 120 ms budget";
}

TEST(InFlightGateTest, WarnsAtMostOncePerIntervalWhileStalled) {
  testing::TestMailbox mb;
  InFlightGate gate(10, 1 << 20, Policy(40ms, 230ms), mb.executor());
  gate.set_stall_detail([] { return std::string("2 live tables"); });
  gate.acquire(1);
  absl::Status s = gate.drain("flush");
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_GE(gate.warnings(), 3);
  EXPECT_LE(gate.warnings(), 6) << "at most one warning per 40 ms over 230 ms";
}

// A completion early in a wait used to be noticed only at the first warning time, which then
// restarted the count: a "no mutation for 60 s" warning came after 120 s. The stall is now
// dated from within a tenth of the interval of the last completion.
TEST(InFlightGateTest, TheFirstStallWarningComesOneIntervalAfterTheLastCompletion) {
  testing::TestMailbox mb;
  InFlightGate gate(10, 1 << 20, Policy(1s), mb.executor());
  gate.acquire(1);
  gate.acquire(1);
  auto complete_one = [&] {
    mb.executor().execute(
        [&] {
          gate.release(1);
          return absl::OkStatus();
        },
        "completion");
  };
  int warnings_at_end = -1;
  std::thread completer([&] {
    std::this_thread::sleep_for(50ms);
    complete_one();  // the last completion for 1.55 s
    std::this_thread::sleep_for(1550ms);
    complete_one();  // ends the drain
  });
  absl::Status s = gate.drain("flush");
  warnings_at_end = gate.warnings();
  completer.join();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(warnings_at_end, 1) << "1.55 s without a completion at a 1 s interval: one warning";
}

TEST(InFlightGateTest, SleepYieldingRunsMailsMeanwhile) {
  testing::TestMailbox mb;
  bool ran = false;
  mb.executor().execute(
      [&] {
        ran = true;
        return absl::OkStatus();
      },
      "mail");
  ASSERT_TRUE(SleepYielding(mb.executor(), 20ms).ok());
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace gcpstream::connector
