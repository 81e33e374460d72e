// Pipeline 2 (examples/pipelines/flights-pubsub-to-bigtable.yaml) run by the gcpstream CLI with
// --stop-when-idle, after pipeline 1 has published a generated flights file: the run drains the
// subscription, then stops by itself with a savepoint once no input arrived for the idle limit,
// leaving one row per flight and nothing unacknowledged.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "tests/integration/pipeline/flights_data.h"
#include "tests/support/bigtable_emulator.h"
#include "tests/support/emulators.h"
#include "tests/support/pubsub_emulator.h"

namespace gcpstream::pipeline {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using testing::Flights;
using testing::ReadFile;

constexpr char kProject[] = "pipeline-idle-it";
constexpr char kInstance[] = "idle";
constexpr int kRecords = 1000;

TEST(FlightsPubSubToBigtableIT, StopWhenIdleDrainsTheSubscriptionThenStopsWithASavepoint) {
  const std::string pubsub = testing::EmulatorEndpoint(testing::Emulator::kPubSub);
  const std::string bigtable = testing::EmulatorEndpoint(testing::Emulator::kBigtable);
  ASSERT_FALSE(pubsub.empty());
  ASSERT_FALSE(bigtable.empty());
  testing::PubSubEmulatorClient client(pubsub);
  const std::string topic = testing::UniqueId("flights-idle");
  const std::string subscription = topic + "-sub";
  const std::string table = testing::UniqueId("flights");
  // The subscription exists before pipeline 1 publishes (pipeline 2 would create it only when
  // it starts, too late to receive anything).
  ASSERT_TRUE(testing::CreateTopicAndSubscription(client, kProject, topic, subscription,
                                                  /*ordering=*/false)
                  .ok());
  const nlohmann::json flights = Flights(kRecords);
  const fs::path dir = testing::WriteFlightsFolder("pipeline-idle-it", flights);
  const std::string env = fmt::format(
      "FLIGHTS_FILE='{}' FLIGHTS_TOPIC='{}' FLIGHTS_SUBSCRIPTION='{}' FLIGHTS_TABLE='{}' "
      "GCP_PROJECT='{}' BIGTABLE_INSTANCE='{}' PUBSUB_EMULATOR_HOST='{}' "
      "BIGTABLE_EMULATOR_HOST='{}' CHECKPOINT_DIR='{}'",
      (dir / "flights.json").string(), topic, subscription, table, kProject, kInstance, pubsub,
      bigtable, (dir / "checkpoints").string());
  const auto run = [&](const std::string& pipeline, const std::string& flags,
                       const std::string& log) {
    const std::string command = fmt::format(
        "cd '{}' && {} timeout 180 '{}' run examples/pipelines/{} {} > '{}' 2>&1",
        GCPSTREAM_SOURCE_DIR, env, GCPSTREAM_CLI_PATH, pipeline, flags, (dir / log).string());
    return std::system(command.c_str());
  };

  ASSERT_EQ(run("flights-to-pubsub.yaml", "", "pipeline1.txt"), 0)
      << "pipeline 1 failed:\n"
      << ReadFile(dir / "pipeline1.txt");
  // No signal and no deadline of ours: the run must end by itself (timeout's 180 s would fail it
  // with status 124).
  const int rc = run("flights-pubsub-to-bigtable.yaml", "--stop-when-idle 3s", "pipeline2.txt");
  const std::string output = ReadFile(dir / "pipeline2.txt");
  ASSERT_EQ(rc, 0) << "pipeline 2 did not stop cleanly by itself:\n" << output;
  EXPECT_THAT(output, ::testing::HasSubstr("no input for 3s: stopping with a savepoint"));

  // The savepoint is where --restore looks for it.
  const fs::path savepoints = dir / "checkpoints" / "flights-pubsub-to-bigtable" / "savepoints";
  ASSERT_TRUE(fs::is_directory(savepoints)) << "no " << savepoints << "; output:\n" << output;
  EXPECT_FALSE(fs::is_empty(savepoints)) << "no savepoint in " << savepoints;

  // One row per flight, keyed origin#date#seq.
  testing::BigtableEmulatorClient bt(bigtable);
  auto rows =
      bt.read_rows(fmt::format("projects/{}/instances/{}/tables/{}", kProject, kInstance, table));
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::vector<std::string> missing;
  for (int i = 0; i < kRecords; ++i) {
    const auto& f = flights[static_cast<std::size_t>(i)];
    const std::string key =
        fmt::format("{}#{}#{}", f["origin"].get<std::string>(), f["date"].get<std::string>(), i);
    if (!rows->contains(key)) missing.push_back(key);
  }
  EXPECT_EQ(rows->size(), static_cast<std::size_t>(kRecords));
  EXPECT_TRUE(missing.empty()) << missing.size() << " of " << kRecords << " rows missing, first "
                               << missing.front();

  // The savepoint acknowledged everything the run consumed: nothing is left to deliver.
  auto left = client.pull(testing::SubscriptionName(kProject, subscription), 1, 3s);
  EXPECT_TRUE(left.empty()) << "an acknowledged message came back: " << left[0].data();
  fs::remove_all(dir);
}

// After a SIGKILL, the messages the killed run had leased come back only when their leases
// lapse (the emulator holds them for a minute or more). The documented recovery, --restore
// --stop-when-idle, must not stop before they are back: it used to stop after its idle limit
// having read nothing, leaving every held message unprocessed.
TEST(FlightsPubSubToBigtableIT, AfterASigkillTheRecoveryRunWaitsForTheHeldMessages) {
  const std::string pubsub = testing::EmulatorEndpoint(testing::Emulator::kPubSub);
  const std::string bigtable = testing::EmulatorEndpoint(testing::Emulator::kBigtable);
  ASSERT_FALSE(pubsub.empty());
  ASSERT_FALSE(bigtable.empty());
  testing::PubSubEmulatorClient client(pubsub);
  const std::string topic = testing::UniqueId("flights-kill");
  const std::string subscription = topic + "-sub";
  const std::string table = testing::UniqueId("flights");
  ASSERT_TRUE(testing::CreateTopicAndSubscription(client, kProject, topic, subscription,
                                                  /*ordering=*/false)
                  .ok());
  constexpr int kFlights = 300;
  const nlohmann::json flights = Flights(kFlights);
  const fs::path dir = testing::WriteFlightsFolder("pipeline-kill-it", flights);
  const std::string env = fmt::format(
      "FLIGHTS_FILE='{}' FLIGHTS_TOPIC='{}' FLIGHTS_SUBSCRIPTION='{}' FLIGHTS_TABLE='{}' "
      "GCP_PROJECT='{}' BIGTABLE_INSTANCE='{}' PUBSUB_EMULATOR_HOST='{}' "
      "BIGTABLE_EMULATOR_HOST='{}' CHECKPOINT_DIR='{}'",
      (dir / "flights.json").string(), topic, subscription, table, kProject, kInstance, pubsub,
      bigtable, (dir / "checkpoints").string());
  const std::string publish = fmt::format(
      "cd '{}' && {} timeout 120 '{}' run examples/pipelines/flights-to-pubsub.yaml "
      "> '{}' 2>&1",
      GCPSTREAM_SOURCE_DIR, env, GCPSTREAM_CLI_PATH, (dir / "pipeline1.txt").string());
  ASSERT_EQ(std::system(publish.c_str()), 0) << ReadFile(dir / "pipeline1.txt");

  // Run 1 reads and writes every flight but never checkpoints (so never acknowledges), and is
  // killed holding every lease.
  const std::string start = fmt::format(
      "cd '{}' && ( {} exec '{}' run examples/pipelines/flights-pubsub-to-bigtable.yaml "
      "--checkpoint-interval 1d > '{}' 2>&1 & echo $! > '{}' )",
      GCPSTREAM_SOURCE_DIR, env, GCPSTREAM_CLI_PATH, (dir / "run1.txt").string(),
      (dir / "run1.pid").string());
  ASSERT_EQ(std::system(start.c_str()), 0);
  int pid = 0;
  std::ifstream(dir / "run1.pid") >> pid;
  ASSERT_GT(pid, 0);
  // The run has read every message once its progress line says so (logged every 10 s).
  const std::string read_all = fmt::format("progress: in {} (", kFlights);
  bool read = false;
  for (auto deadline = std::chrono::steady_clock::now() + 90s;
       !read && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(500ms);
    read = ReadFile(dir / "run1.txt").find(read_all) != std::string::npos;
  }
  ::kill(pid, SIGKILL);
  ASSERT_TRUE(read) << "run 1 did not read every flight within 90 s; its output:\n"
                    << ReadFile(dir / "run1.txt");

  // The recovery run: no signal and no deadline of ours, it must end by itself, having read
  // every message run 1 held.
  const std::string recover = fmt::format(
      "cd '{}' && {} timeout 400 '{}' run examples/pipelines/flights-pubsub-to-bigtable.yaml "
      "--restore --stop-when-idle 3s > '{}' 2>&1",
      GCPSTREAM_SOURCE_DIR, env, GCPSTREAM_CLI_PATH, (dir / "run2.txt").string());
  const int rc = std::system(recover.c_str());
  const std::string output = ReadFile(dir / "run2.txt");
  ASSERT_EQ(rc, 0) << "the recovery run did not stop cleanly by itself:\n" << output;
  EXPECT_THAT(output, ::testing::HasSubstr("idleness is counted from then on"));
  std::smatch in;
  ASSERT_TRUE(std::regex_search(output, in, std::regex(R"(records\s+in ([0-9,]+))"))) << output;
  std::string digits = in[1].str();
  digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
  EXPECT_GE(std::stoi(digits), kFlights)
      << "the recovery run stopped before the messages run 1 held came back:\n"
      << output;
  // Every flight is in the table ...
  testing::BigtableEmulatorClient bt(bigtable);
  auto rows =
      bt.read_rows(fmt::format("projects/{}/instances/{}/tables/{}", kProject, kInstance, table));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->size(), static_cast<std::size_t>(kFlights));
  // ... and the savepoint acknowledged every message: nothing is left to deliver.
  auto left = client.pull(testing::SubscriptionName(kProject, subscription), 1, 3s);
  EXPECT_TRUE(left.empty()) << "a message was left unacknowledged: " << left[0].data();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gcpstream::pipeline
