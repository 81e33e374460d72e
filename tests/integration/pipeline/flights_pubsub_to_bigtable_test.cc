// Pipeline 2 (examples/pipelines/flights-pubsub-to-bigtable.yaml) run by the gcpstream CLI with
// --stop-when-idle, after pipeline 1 has published a generated flights file: the run drains the
// subscription, then stops by itself with a savepoint once no input arrived for the idle limit,
// leaving one row per flight and nothing unacknowledged.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

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

}  // namespace
}  // namespace gcpstream::pipeline
