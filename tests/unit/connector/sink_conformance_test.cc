// The behaviours every sink built on connector::AsyncSinkWriter owes its users, run against each
// sink over its fake clients (tests/support/*_sink_harness.h). A new sink adds a harness and a
// line to INSTANTIATE_TEST_SUITE_P below; docs/writing-a-connector.md says so.
//
// Every wait is bounded: a watchdog fails the test after 20 s, naming what the fake clients had
// received, and fails everything still pending so a broken wait ends instead of hanging.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <mutex>
#include <thread>

#include "tests/support/bigtable_sink_harness.h"
#include "tests/support/cloud_tasks_sink_harness.h"
#include "tests/support/pubsub_sink_harness.h"
#include "tests/support/sink_harness.h"
#include "tests/support/watchdog.h"

namespace gcpstream::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

// Records what reaches a failure handler (keys are the records' keys, by payload).
struct Recorded {
  std::mutex mu;
  std::vector<absl::StatusCode> codes;
  std::vector<bool> service_rejections;
  std::size_t size() {
    std::lock_guard lock(mu);
    return codes.size();
  }
};

class SinkConformanceTest : public ::testing::TestWithParam<SinkHarnessFactory> {
 protected:
  SinkConformanceTest()
      : harness_(GetParam()()), watchdog_(20s, [h = harness_.get()] {
          return "clients:" + h->fail_everything_pending(absl::DeadlineExceededError("watchdog"));
        }) {}

  std::shared_ptr<connector::FailureHandler> recording_handler() {
    return connector::FailureHandler::custom([r = recorded_](const connector::FailedElement& e) {
      std::lock_guard lock(r->mu);
      r->codes.push_back(e.status().code());
      r->service_rejections.push_back(e.is_service_rejection());
      return absl::OkStatus();
    });
  }

  // Runs `fn` on another thread after `delay`, as a gRPC thread would answer.
  std::thread later(std::chrono::milliseconds delay, std::function<void()> fn) {
    return std::thread([delay, fn = std::move(fn)] {
      std::this_thread::sleep_for(delay);
      fn();
    });
  }

  std::unique_ptr<SinkHarness> harness_;
  Watchdog watchdog_;
  std::shared_ptr<Recorded> recorded_ = std::make_shared<Recorded>();
};

TEST_P(SinkConformanceTest, AtTheCountCapAWriteSendsWhatIsBatchedThenWaitsForACompletion) {
  SinkHarnessOptions o;
  o.max_in_flight_count = 3;
  ASSERT_TRUE(harness_->open(o).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(harness_->write("d1", "k" + std::to_string(i)).ok());
  EXPECT_EQ(harness_->metric(harness_->in_flight_gauge()), 3);
  const int flushes_before = harness_->client_flushes("d1");
  auto completer = later(50ms, [&] { harness_->complete("d1", 0, absl::OkStatus()); });
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(harness_->write("d1", "k3").ok());
  completer.join();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 40ms) << "the 4th write did not wait";
  if (harness_->batches()) {
    EXPECT_GT(harness_->client_flushes("d1"), flushes_before)
        << "waiting at the cap must send what the client holds, or nothing can complete";
  }
  EXPECT_EQ(harness_->metric(harness_->in_flight_gauge()), 3);
  for (std::size_t i = 1; i < 4; ++i) harness_->complete("d1", i, absl::OkStatus());
  ASSERT_TRUE(harness_->flush(false).ok());
  EXPECT_EQ(harness_->metric(harness_->in_flight_gauge()), 0);
  EXPECT_EQ(harness_->metric("numRecordsSend"), 4);
  ASSERT_TRUE(harness_->close().ok());
}

TEST_P(SinkConformanceTest, AtTheByteCapAnOversizedElementIsAdmittedAloneAndTheNextWaits) {
  SinkHarnessOptions o;
  o.max_in_flight_bytes = 1;  // every element is over it
  ASSERT_TRUE(harness_->open(o).ok());
  ASSERT_TRUE(harness_->write("d1", "first").ok()) << "admitted on an empty writer";
  auto completer = later(50ms, [&] { harness_->complete("d1", 0, absl::OkStatus()); });
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(harness_->write("d1", "second").ok());
  completer.join();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 40ms)
      << "one element in flight, far below the count cap, yet the byte cap must hold the next";
  harness_->complete("d1", 1, absl::OkStatus());
  ASSERT_TRUE(harness_->flush(false).ok());
  EXPECT_EQ(harness_->metric("inFlightBytes"), 0);
  ASSERT_TRUE(harness_->close().ok());
}

TEST_P(SinkConformanceTest, FlushSendsEveryClientAndWaitsForEveryOutcome) {
  ASSERT_TRUE(harness_->open({}).ok());
  ASSERT_TRUE(harness_->write("d1", "a").ok());
  ASSERT_TRUE(harness_->write("d2", "b").ok());
  auto completer = later(50ms, [&] {
    harness_->complete("d1", 0, absl::OkStatus());
    harness_->complete("d2", 0, absl::OkStatus());
  });
  ASSERT_TRUE(harness_->flush(false).ok());
  completer.join();
  if (harness_->batches()) {
    EXPECT_GE(harness_->client_flushes("d1"), 1);
    EXPECT_GE(harness_->client_flushes("d2"), 1);
  }
  EXPECT_EQ(harness_->metric(harness_->in_flight_gauge()), 0)
      << "flush returned with outcomes still outstanding";
  ASSERT_TRUE(harness_->close().ok());
}

TEST_P(SinkConformanceTest, AnOutageNeverReachesADroppingHandler) {
  for (absl::Status outage :
       {absl::UnavailableError("service down"), absl::InternalError("stream broke"),
        absl::DeadlineExceededError("too slow"), absl::ResourceExhaustedError("quota")}) {
    auto harness = GetParam()();
    SinkHarnessOptions o;
    o.handler = recording_handler();
    ASSERT_TRUE(harness->open(o).ok());
    ASSERT_TRUE(harness->write("d1", "a").ok());
    harness->complete("d1", 0, outage);
    absl::Status s = harness->flush(false);
    EXPECT_EQ(s.code(), outage.code()) << s;
    EXPECT_EQ(recorded_->size(), 0u) << outage << " reached the dropping handler";
    ASSERT_TRUE(harness->close().ok());
  }
}

TEST_P(SinkConformanceTest, AFailureFromAnOutcomeSurfacesAtTheNextWriteWithItsCode) {
  ASSERT_TRUE(harness_->open({}).ok());
  ASSERT_TRUE(harness_->write("d1", "a").ok());
  auto completer =
      later(0ms, [&] { harness_->complete("d1", 0, absl::PermissionDeniedError("no access")); });
  completer.join();
  ASSERT_TRUE(harness_->run_pending_mails().ok());  // the completion, as the mailbox runs it
  absl::Status s = harness_->write("d1", "b");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("d1")) << "the failure names its destination";
  ASSERT_TRUE(harness_->close().ok());
}

TEST_P(SinkConformanceTest, TheIsolationPassRoutesOnlyTheElementTheServiceRefusesAlone) {
  if (!harness_->batches()) GTEST_SKIP() << "one element per request: see the next test";
  SinkHarnessOptions o;
  o.handler = recording_handler();
  ASSERT_TRUE(harness_->open(o).ok());
  // A batched request is refused whole; alone, only "bad" is refused.
  harness_->respond([](const std::string& key, bool solo, int) -> std::optional<absl::Status> {
    if (!solo) return absl::InvalidArgumentError("the request holds a bad element");
    if (key == "bad") return absl::InvalidArgumentError("bad element");
    return absl::OkStatus();
  });
  ASSERT_TRUE(harness_->write("d1", "good1").ok());
  ASSERT_TRUE(harness_->write("d1", "bad").ok());
  ASSERT_TRUE(harness_->write("d1", "good2").ok());
  ASSERT_TRUE(harness_->flush(false).ok());
  ASSERT_EQ(recorded_->size(), 1u) << "only the element refused alone reaches the handler";
  EXPECT_EQ(recorded_->codes[0], absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(recorded_->service_rejections[0]);
  std::vector<std::string> solos;
  for (std::size_t i = 0; i < harness_->submitted("d1"); ++i) {
    if (harness_->solo("d1", i)) solos.push_back(harness_->key("d1", i));
  }
  EXPECT_EQ(solos, (std::vector<std::string>{"good1", "bad", "good2"}))
      << "each element of the refused request is re-sent alone, in write order";
  EXPECT_EQ(harness_->metric("numRecordsSendErrors"), 1);
  ASSERT_TRUE(harness_->close().ok());
}

TEST_P(SinkConformanceTest, ARefusalOfAOneElementRequestIsRoutedWithoutAResend) {
  if (harness_->batches()) GTEST_SKIP() << "batching sinks: see the isolation pass test";
  SinkHarnessOptions o;
  o.handler = recording_handler();
  ASSERT_TRUE(harness_->open(o).ok());
  harness_->respond([](const std::string& key, bool, int) -> std::optional<absl::Status> {
    if (key == "bad") return absl::InvalidArgumentError("bad element");
    return absl::OkStatus();
  });
  for (const char* k : {"good1", "bad", "good2"}) ASSERT_TRUE(harness_->write("d1", k).ok());
  ASSERT_TRUE(harness_->flush(false).ok());
  ASSERT_EQ(recorded_->size(), 1u) << "only the refused element reaches the handler";
  EXPECT_EQ(recorded_->codes[0], absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(recorded_->service_rejections[0]);
  EXPECT_EQ(harness_->submitted("d1"), 3u)
      << "the service answered about that element alone: nothing is sent again";
  EXPECT_EQ(harness_->metric("numRecordsSendErrors"), 1);
  ASSERT_TRUE(harness_->close().ok());
}

TEST_P(SinkConformanceTest, ConsecutiveRejectionsFailTheJobAtTheBound) {
  SinkHarnessOptions o;
  o.handler = recording_handler();
  o.max_consecutive_rejections = 3;
  ASSERT_TRUE(harness_->open(o).ok());
  harness_->respond([](const std::string&, bool, int) -> std::optional<absl::Status> {
    return absl::InvalidArgumentError("refused");
  });
  absl::Status s;
  for (int i = 0; i < 10 && s.ok(); ++i) {
    s = harness_->write("d1", "k" + std::to_string(i));
    if (s.ok()) s = harness_->flush(false);
  }
  EXPECT_FALSE(s.ok()) << "a sink refused wholesale must fail the job";
  EXPECT_THAT(std::string(s.message()), HasSubstr("max_consecutive_rejections"));
  EXPECT_EQ(recorded_->size(), 3u);
  ASSERT_TRUE(harness_->close().ok());
}

TEST_P(SinkConformanceTest, AMissingDestinationIsCreatedAndItsElementsResentInWriteOrder) {
  if (!harness_->creates_destinations()) GTEST_SKIP() << "this sink never creates destinations";
  SinkHarnessOptions o;
  o.create_if_needed = true;
  o.handler = recording_handler();
  ASSERT_TRUE(harness_->open(o).ok());
  // Everything fails NOT_FOUND until the repair created the destination.
  SinkHarness* h = harness_.get();
  harness_->respond([h](const std::string&, bool, int) -> std::optional<absl::Status> {
    if (h->created().empty()) return absl::NotFoundError("no such destination");
    return absl::OkStatus();
  });
  for (const char* k : {"a", "b", "c"}) ASSERT_TRUE(harness_->write("d1", k).ok());
  ASSERT_TRUE(harness_->flush(false).ok());
  EXPECT_EQ(harness_->created(), std::vector<std::string>{"d1"});
  ASSERT_EQ(harness_->submitted("d1"), 6u);
  EXPECT_EQ(harness_->key("d1", 3), "a");
  EXPECT_EQ(harness_->key("d1", 4), "b");
  EXPECT_EQ(harness_->key("d1", 5), "c");
  EXPECT_EQ(recorded_->size(), 0u) << "a missing destination is never a record failure";
  EXPECT_EQ(harness_->metric("parked" + harness_->in_flight_gauge().substr(8)), 0);
  ASSERT_TRUE(harness_->close().ok());
}

TEST_P(SinkConformanceTest, AMissingDestinationWithoutACreateDispositionFailsAndIsNeverRouted) {
  SinkHarnessOptions o;
  o.handler = recording_handler();
  ASSERT_TRUE(harness_->open(o).ok());
  ASSERT_TRUE(harness_->write("d1", "a").ok());
  harness_->complete("d1", 0, absl::NotFoundError("no such destination"));
  absl::Status s = harness_->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(harness_->missing_destination_words()));
  EXPECT_EQ(recorded_->size(), 0u);
  EXPECT_TRUE(harness_->created().empty());
  ASSERT_TRUE(harness_->close().ok());
}

TEST_P(SinkConformanceTest, ASerializerFailureIsRoutedAsSuchAndASkipIsOnlyCounted) {
  SinkHarnessOptions o;
  o.handler = recording_handler();
  o.max_consecutive_rejections = 1;
  ASSERT_TRUE(harness_->open(o).ok());
  ASSERT_TRUE(harness_->write_skipped("d1").ok());
  EXPECT_EQ(harness_->metric("recordsSkipped"), 1);
  EXPECT_EQ(recorded_->size(), 0u) << "a skip is not a failure";
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(harness_->write_unserializable("d1").ok())
        << "serializer failures never count toward max_consecutive_rejections";
  }
  ASSERT_EQ(recorded_->size(), 3u);
  EXPECT_FALSE(recorded_->service_rejections[0]);
  EXPECT_EQ(harness_->metric("numRecordsSend"), 0);
  EXPECT_EQ(harness_->submitted("d1"), 0u) << "nothing reached the service";
  ASSERT_TRUE(harness_->close().ok());
}

TEST_P(SinkConformanceTest, CloseReleasesEveryClientWhileElementsAreStillInFlight) {
  ASSERT_TRUE(harness_->open({}).ok());
  ASSERT_TRUE(harness_->write("d1", "a").ok());
  ASSERT_TRUE(harness_->write("d2", "b").ok());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(harness_->close().ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_EQ(harness_->client_shutdowns("d1"), 1);
  EXPECT_EQ(harness_->client_shutdowns("d2"), 1);
  // An outcome arriving after close finds nobody listening (no crash, no mail).
  harness_->complete("d1", 0, absl::OkStatus());
}

TEST_P(SinkConformanceTest, AStalledWaitWarnsOnTimeNamingTheConnectorAndTheWait) {
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  auto logger = spdlog::default_logger();
  logger->sinks().push_back(ring);
  SinkHarnessOptions o;
  o.stall_warning_interval = 50ms;
  ASSERT_TRUE(harness_->open(o).ok());
  ASSERT_TRUE(harness_->write("d1", "a").ok());
  auto completer = later(400ms, [&] { harness_->complete("d1", 0, absl::OkStatus()); });
  ASSERT_TRUE(harness_->flush(false).ok());
  completer.join();
  logger->sinks().pop_back();
  std::string warnings;
  int count = 0;
  for (const auto& line : ring->last_formatted()) {
    if (line.find("no ") == std::string::npos) continue;  // other log lines
    warnings += line;
    ++count;
  }
  // 400 ms stalled at one warning per 50 ms: a first warning that waits for a second interval
  // (or longer) shows up as too few.
  EXPECT_GE(count, 4) << warnings;
  EXPECT_THAT(warnings, HasSubstr(harness_->connector()));
  EXPECT_THAT(warnings, HasSubstr("flushing for a checkpoint"));
  // ... and what it waits on: the destination with work in flight and the call carrying it.
  EXPECT_THAT(warnings, HasSubstr("pending: 1 "));
  EXPECT_THAT(warnings, HasSubstr("d1"));
  EXPECT_THAT(warnings, HasSubstr("responses)"));
  ASSERT_TRUE(harness_->close().ok());
}

INSTANTIATE_TEST_SUITE_P(
    Sinks, SinkConformanceTest,
    ::testing::Values(SinkHarnessFactory([] { return std::make_unique<PubSubSinkHarness>(); }),
                      SinkHarnessFactory([] { return std::make_unique<BigtableSinkHarness>(); }),
                      SinkHarnessFactory([] { return std::make_unique<CloudTasksSinkHarness>(); })),
    [](const ::testing::TestParamInfo<SinkHarnessFactory>& info) { return info.param()->name(); });

}  // namespace
}  // namespace gcpstream::testing
