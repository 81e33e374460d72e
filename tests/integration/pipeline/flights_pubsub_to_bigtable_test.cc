// Pipeline 2 (examples/pipelines/flights-pubsub-to-bigtable.yaml) run by the gcpstream CLI as a
// process, after pipeline 1 has published a generated flights file: stopping when idle, being
// killed and recovered, and being stopped while Bigtable does not answer (through the fault
// proxy).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "tests/fakes/fault_proxy.h"
#include "tests/integration/pipeline/flights_data.h"
#include "tests/support/bigtable_emulator.h"
#include "tests/support/emulators.h"
#include "tests/support/pubsub_emulator.h"

namespace gcpstream::pipeline {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using testing::Flights;
using ::testing::HasSubstr;
using testing::ReadFile;

constexpr char kProject[] = "pipeline-idle-it";
constexpr char kInstance[] = "idle";
constexpr char kPipeline2[] = "examples/pipelines/flights-pubsub-to-bigtable.yaml";

// A topic with its subscription, a table name, a flights file, and the CLI run against them.
class FlightsPipelineIT : public ::testing::Test {
 protected:
  void SetUp() override {
    pubsub_ = testing::EmulatorEndpoint(testing::Emulator::kPubSub);
    bigtable_ = testing::EmulatorEndpoint(testing::Emulator::kBigtable);
    ASSERT_FALSE(pubsub_.empty());
    ASSERT_FALSE(bigtable_.empty());
    client_ = std::make_unique<testing::PubSubEmulatorClient>(pubsub_);
    topic_ = testing::UniqueId("flights-it");
    subscription_ = topic_ + "-sub";
    table_ = testing::UniqueId("flights");
    // The subscription exists before pipeline 1 publishes (pipeline 2 would create it only
    // when it starts, too late to receive anything).
    ASSERT_TRUE(testing::CreateTopicAndSubscription(*client_, kProject, topic_, subscription_,
                                                    /*ordering=*/false)
                    .ok());
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Writes `n` flights and publishes them with pipeline 1.
  void Publish(int n) {
    flights_ = Flights(n);
    dir_ = testing::WriteFlightsFolder("pipeline2-it", flights_);
    ASSERT_EQ(Run("examples/pipelines/flights-to-pubsub.yaml", "", "pipeline1.txt", 120s), 0)
        << "pipeline 1 failed:\n"
        << ReadFile(dir_ / "pipeline1.txt");
  }

  // The environment the example pipelines read; Bigtable through `bigtable` when given.
  std::string Env(const std::string& bigtable = "") const {
    return fmt::format(
        "FLIGHTS_FILE='{}' FLIGHTS_TOPIC='{}' FLIGHTS_SUBSCRIPTION='{}' FLIGHTS_TABLE='{}' "
        "GCP_PROJECT='{}' BIGTABLE_INSTANCE='{}' PUBSUB_EMULATOR_HOST='{}' "
        "BIGTABLE_EMULATOR_HOST='{}' CHECKPOINT_DIR='{}' FLIGHTS_READBACK_TOPIC='{}'",
        (dir_ / "flights.json").string(), topic_, subscription_, table_, kProject, kInstance,
        pubsub_, bigtable.empty() ? bigtable_ : bigtable, (dir_ / "checkpoints").string(),
        topic_ + "-readback");
  }

  // Runs the CLI to its end (killed by `timeout` after `limit`); the exit code, output in `log`.
  int Run(const std::string& pipeline, const std::string& flags, const std::string& log,
          std::chrono::seconds limit) {
    const std::string command = fmt::format(
        "cd '{}' && {} timeout {} '{}' run {} {} > '{}' 2>&1", GCPSTREAM_SOURCE_DIR, Env(),
        limit.count(), GCPSTREAM_CLI_PATH, pipeline, flags, (dir_ / log).string());
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // Starts the CLI on `pipeline` in the background, signals going straight to it (no `timeout`
  // in between); returns its pid. A shell waits for it and keeps its exit code for
  // WaitForExit().
  int Start(const std::string& pipeline, const std::string& flags, const std::string& log,
            const std::string& bigtable = "") {
    const fs::path pid_file = dir_ / (log + ".pid");
    const std::string command = fmt::format(
        "cd '{}' && ( {} '{}' run '{}' {} > '{}' 2>&1 & p=$!; echo $p > '{}'; wait $p; "
        "echo $? > '{}' ) > /dev/null 2>&1 &",
        GCPSTREAM_SOURCE_DIR, Env(bigtable), GCPSTREAM_CLI_PATH, pipeline, flags,
        (dir_ / log).string(), pid_file.string(), (dir_ / (log + ".rc")).string());
    if (std::system(command.c_str()) != 0) return 0;
    int pid = 0;
    for (auto deadline = std::chrono::steady_clock::now() + 10s;
         pid == 0 && std::chrono::steady_clock::now() < deadline;
         std::this_thread::sleep_for(50ms)) {
      std::ifstream(pid_file) >> pid;
    }
    return pid;
  }

  // Waits until `log` contains `text`; false at the deadline.
  bool WaitForLog(const std::string& log, const std::string& text, std::chrono::seconds limit) {
    for (auto deadline = std::chrono::steady_clock::now() + limit;
         std::chrono::steady_clock::now() < deadline;) {
      if (ReadFile(dir_ / log).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }

  // The exit code of the run Start() began with `log`, once it ended; -1 if it is still running
  // at the deadline (it is then killed).
  int WaitForExit(int pid, const std::string& log, std::chrono::seconds limit) {
    const fs::path rc_file = dir_ / (log + ".rc");
    for (auto deadline = std::chrono::steady_clock::now() + limit;
         std::chrono::steady_clock::now() < deadline;) {
      int rc = -1;
      if (std::ifstream(rc_file) >> rc) return rc;
      std::this_thread::sleep_for(100ms);
    }
    ::kill(pid, SIGKILL);
    return -1;
  }

  // The rows of the table, keyed origin#date#seq: how many of the published flights are there.
  std::size_t FlightsInTable() {
    testing::BigtableEmulatorClient bt(bigtable_);
    auto rows = bt.read_rows(
        fmt::format("projects/{}/instances/{}/tables/{}", kProject, kInstance, table_));
    EXPECT_TRUE(rows.ok()) << rows.status();
    if (!rows.ok()) return 0;
    std::size_t found = 0;
    for (std::size_t i = 0; i < flights_.size(); ++i) {
      const auto& f = flights_[i];
      found += rows->contains(
          fmt::format("{}#{}#{}", f["origin"].get<std::string>(), f["date"].get<std::string>(), i));
    }
    EXPECT_EQ(rows->size(), found) << "rows that are no published flight";
    return found;
  }

  // A fault proxy in front of the Bigtable emulator that holds every MutateRows unanswered.
  std::unique_ptr<testing::FaultProxy> StalledBigtable() {
    auto proxy = testing::FaultProxy::start(bigtable_);
    EXPECT_TRUE(proxy.ok()) << proxy.status();
    if (!proxy.ok()) return nullptr;
    testing::FaultRule hang;
    hang.method = "MutateRows";
    hang.action = testing::FaultRule::Action::kHang;
    (*proxy)->add_rule(hang);
    return std::move(*proxy);
  }

  // Nothing is left on the subscription: every message was acknowledged.
  void ExpectNothingLeft() {
    auto left = client_->pull(testing::SubscriptionName(kProject, subscription_), 1, 3s);
    EXPECT_TRUE(left.empty()) << "a message was left unacknowledged: " << left[0].data();
  }

  std::string pubsub_;
  std::string bigtable_;
  std::unique_ptr<testing::PubSubEmulatorClient> client_;
  std::string topic_;
  std::string subscription_;
  std::string table_;
  nlohmann::json flights_;
  fs::path dir_;
};

// The run drains the subscription, then stops by itself with a savepoint once no input arrived
// for the idle limit, leaving one row per flight and nothing unacknowledged.
TEST_F(FlightsPipelineIT, StopWhenIdleDrainsTheSubscriptionThenStopsWithASavepoint) {
  constexpr int kFlights = 1000;
  Publish(kFlights);
  // No signal and no deadline of ours: the run must end by itself (timeout's 180 s would fail
  // it with status 124).
  const int rc = Run(kPipeline2, "--stop-when-idle 3s", "pipeline2.txt", 180s);
  const std::string output = ReadFile(dir_ / "pipeline2.txt");
  ASSERT_EQ(rc, 0) << "pipeline 2 did not stop cleanly by itself:\n" << output;
  EXPECT_THAT(output, HasSubstr("no input for 3s: stopping with a savepoint"));
  // The savepoint is where --restore looks for it.
  const fs::path savepoints = dir_ / "checkpoints" / "flights-pubsub-to-bigtable" / "savepoints";
  ASSERT_TRUE(fs::is_directory(savepoints)) << "no " << savepoints << "; output:\n" << output;
  EXPECT_FALSE(fs::is_empty(savepoints)) << "no savepoint in " << savepoints;
  EXPECT_EQ(FlightsInTable(), static_cast<std::size_t>(kFlights));
  ExpectNothingLeft();
}

// Pipeline 3 reads the table pipeline 2 wrote back out to Pub/Sub: the bounded scan ends by
// itself with one message per flight, each carrying its row's columns.
TEST_F(FlightsPipelineIT, ThenTheScanSourcePublishesEveryRowOnceAndEnds) {
  constexpr int kFlights = 500;
  Publish(kFlights);
  ASSERT_EQ(Run(kPipeline2, "--stop-when-idle 3s", "pipeline2.txt", 180s), 0)
      << ReadFile(dir_ / "pipeline2.txt");
  ASSERT_EQ(FlightsInTable(), static_cast<std::size_t>(kFlights));
  const std::string readback = topic_ + "-readback";
  ASSERT_TRUE(testing::CreateTopicAndSubscription(*client_, kProject, readback, readback + "-sub",
                                                  /*ordering=*/false)
                  .ok());
  const int rc =
      Run("examples/pipelines/flights-bigtable-to-pubsub.yaml", "", "pipeline3.txt", 120s);
  ASSERT_EQ(rc, 0) << "pipeline 3 did not end by itself:\n" << ReadFile(dir_ / "pipeline3.txt");
  auto messages =
      client_->pull(testing::SubscriptionName(kProject, readback + "-sub"), kFlights + 1, 10s);
  std::set<std::string> keys;
  for (const auto& m : messages) {
    auto row = nlohmann::json::parse(m.data());
    keys.insert(row["_row_key"].get<std::string>());
    EXPECT_EQ(m.attributes().at("row_key"), row["_row_key"]);
    EXPECT_TRUE(row.contains("delay") && row.contains("distance") && row.contains("destination"))
        << m.data();
  }
  EXPECT_EQ(messages.size(), static_cast<std::size_t>(kFlights)) << "one message per row";
  EXPECT_EQ(keys.size(), static_cast<std::size_t>(kFlights));
}

// After a SIGKILL, the messages the killed run had leased come back only when their leases
// lapse (the emulator holds them for a minute or more). The documented recovery, --restore
// --stop-when-idle, must not stop before they are back: it used to stop after its idle limit
// having read nothing, leaving every held message unprocessed.
TEST_F(FlightsPipelineIT, AfterASigkillTheRecoveryRunWaitsForTheHeldMessages) {
  constexpr int kFlights = 300;
  Publish(kFlights);
  // Run 1 reads every flight but never checkpoints (so never acknowledges), and is killed
  // holding every lease. Its progress line says when it has read them (logged every 10 s).
  const int pid = Start(kPipeline2, "--checkpoint-interval 1d", "run1.txt");
  ASSERT_GT(pid, 0);
  const bool read = WaitForLog("run1.txt", fmt::format("progress: in {} (", kFlights), 90s);
  ::kill(pid, SIGKILL);
  EXPECT_EQ(WaitForExit(pid, "run1.txt", 10s), 128 + SIGKILL);
  ASSERT_TRUE(read) << "run 1 did not read every flight within 90 s; its output:\n"
                    << ReadFile(dir_ / "run1.txt");

  // The recovery run: no signal and no deadline of ours, it must end by itself, having read
  // every message run 1 held.
  const int rc = Run(kPipeline2, "--restore --stop-when-idle 3s", "run2.txt", 400s);
  const std::string output = ReadFile(dir_ / "run2.txt");
  ASSERT_EQ(rc, 0) << "the recovery run did not stop cleanly by itself:\n" << output;
  EXPECT_THAT(output, HasSubstr("idleness is counted from then on"));
  std::smatch in;
  ASSERT_TRUE(std::regex_search(output, in, std::regex(R"(records\s+in ([0-9,]+))"))) << output;
  std::string digits = in[1].str();
  digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
  EXPECT_GE(std::stoi(digits), kFlights)
      << "the recovery run stopped before the messages run 1 held came back:\n"
      << output;
  EXPECT_EQ(FlightsInTable(), static_cast<std::size_t>(kFlights));
  ExpectNothingLeft();
}

// A message nested 100,000 levels deep used to overflow the stack (SIGSEGV) on every
// redelivery. It is a deserialization failure: under the example's FAIL policy the job fails
// (exit 1) naming the depth, and nothing crashes.
TEST_F(FlightsPipelineIT, ADeeplyNestedMessageIsADeserializationFailureNotACrash) {
  dir_ = testing::WriteFlightsFolder("pipeline2-it", Flights(2));  // a folder; not published
  google::pubsub::v1::PubsubMessage nested;
  nested.set_data("{\"origin\":\"X\",\"d\":" + std::string(100'000, '[') +
                  std::string(100'000, ']') + "}");
  ASSERT_TRUE(client_->publish(testing::TopicName(kProject, topic_), {nested}).ok());
  const int rc = Run(kPipeline2, "--stop-when-idle 3s", "run.txt", 120s);
  const std::string output = ReadFile(dir_ / "run.txt");
  EXPECT_EQ(rc, 1) << output;
  EXPECT_THAT(output, HasSubstr("nested deeper than 256"));
}

// Bigtable stops answering MutateRows (the fault proxy holds every call): a stop with savepoint
// cannot flush. A second SIGTERM, a second or more after the first, cancels: exit code 143.
TEST_F(FlightsPipelineIT, ASecondSigtermCancelsAStopThatCannotFlush) {
  Publish(100);
  auto proxy = StalledBigtable();
  ASSERT_NE(proxy, nullptr);
  const int pid = Start(kPipeline2, "--checkpoint-interval 1d", "run.txt", proxy->endpoint());
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitForLog("run.txt", "progress: in 100 (", 60s)) << ReadFile(dir_ / "run.txt");
  ::kill(pid, SIGTERM);
  ASSERT_TRUE(WaitForLog("run.txt", "SIGTERM: stopping with a savepoint", 10s))
      << ReadFile(dir_ / "run.txt");
  std::this_thread::sleep_for(1500ms);
  ::kill(pid, SIGTERM);
  EXPECT_EQ(WaitForExit(pid, "run.txt", 90s), 143) << ReadFile(dir_ / "run.txt");
  EXPECT_THAT(ReadFile(dir_ / "run.txt"), HasSubstr("SIGTERM again: cancelling the job"));
  // Nothing reached the table: the summary must not count the unanswered entries as out.
  EXPECT_THAT(ReadFile(dir_ / "run.txt"), HasSubstr("in 100, invalid 0, filtered 0, out 0,"));
  EXPECT_GT(proxy->faults(), 0) << "no MutateRows reached the proxy";
}

// The same stall with a short checkpoint timeout: the savepoint fails at the timeout naming
// the subtask that did not acknowledge it and what it waits on (the table, the pending
// entries, MutateRows), and the job ends (exit 1) instead of waiting for ever.
TEST_F(FlightsPipelineIT, AStopThatCannotFlushFailsAtTheCheckpointTimeoutNamingTheWait) {
  Publish(100);
  auto proxy = StalledBigtable();
  ASSERT_NE(proxy, nullptr);
  // The example with a 5 s checkpoint timeout (a wait describes itself after a second).
  std::string yaml = ReadFile(fs::path(GCPSTREAM_SOURCE_DIR) / kPipeline2);
  const std::string interval = "  interval: 1s\n";
  ASSERT_NE(yaml.find(interval), std::string::npos);
  yaml.replace(yaml.find(interval), interval.size(), "  interval: 1d\n  timeout: 5s\n");
  const fs::path pipeline = dir_ / "stalled.yaml";
  std::ofstream(pipeline) << yaml;
  const int pid = Start(pipeline.string(), "", "run.txt", proxy->endpoint());
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitForLog("run.txt", "progress: in 100 (", 60s)) << ReadFile(dir_ / "run.txt");
  ::kill(pid, SIGTERM);
  // 5 s to the timeout, then the writers' bounded close.
  EXPECT_EQ(WaitForExit(pid, "run.txt", 90s), 1) << ReadFile(dir_ / "run.txt");
  const std::string output = ReadFile(dir_ / "run.txt");
  EXPECT_THAT(output, HasSubstr("stopping with a savepoint"));
  EXPECT_THAT(output, HasSubstr("expired after 5000 ms"));
  EXPECT_THAT(output, HasSubstr("(waiting: Bigtable sink: no mutation has completed"));
  EXPECT_THAT(output, HasSubstr(fmt::format("to table projects/{}/instances/{}/tables/{}", kProject,
                                            kInstance, table_)));
  EXPECT_THAT(output, HasSubstr("(awaiting MutateRows responses)"));
}

}  // namespace
}  // namespace gcpstream::pipeline
