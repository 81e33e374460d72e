// Pipeline 1 (examples/pipelines/flights-to-pubsub.yaml) run by the gcpstream CLI against the
// Pub/Sub emulator, on a generated flights file: every record arrives once, with its ordinal
// as attribute `seq`, its origin as ordering key, and the record as JSON data.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/integration/pipeline/flights_data.h"
#include "tests/support/emulators.h"
#include "tests/support/pubsub_emulator.h"

namespace gcpstream::pipeline {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using testing::Flights;
using testing::ReadFile;

constexpr char kProject[] = "pipeline-it";
constexpr int kRecords = 3000;

TEST(FlightsToPubSubIT, EveryRecordArrivesOnceWithItsOrdinalAndOrderingKey) {
  const std::string endpoint = testing::EmulatorEndpoint(testing::Emulator::kPubSub);
  ASSERT_FALSE(endpoint.empty());
  testing::PubSubEmulatorClient client(endpoint);
  const std::string topic = testing::UniqueId("flights");
  ASSERT_TRUE(testing::CreateTopicAndSubscription(client, kProject, topic, topic + "-sub",
                                                  /*ordering=*/true)
                  .ok());
  const nlohmann::json flights = Flights(kRecords);
  const fs::path dir = testing::WriteFlightsFolder("pipeline-it", flights);

  const std::string command = fmt::format(
      "cd '{}' && FLIGHTS_FILE='{}' FLIGHTS_TOPIC='{}' GCP_PROJECT='{}' "
      "PUBSUB_EMULATOR_HOST='{}' CHECKPOINT_DIR='{}' timeout 180 '{}' run "
      "examples/pipelines/flights-to-pubsub.yaml > '{}' 2>&1",
      GCPSTREAM_SOURCE_DIR, (dir / "flights.json").string(), topic, kProject, endpoint,
      (dir / "checkpoints").string(), GCPSTREAM_CLI_PATH, (dir / "out.txt").string());
  const int rc = std::system(command.c_str());
  const std::string output = ReadFile(dir / "out.txt");
  ASSERT_EQ(rc, 0) << "gcpstream run failed:\n" << output;
  EXPECT_THAT(output, ::testing::HasSubstr(fmt::format(
                          "out {},", fmt::format("{},{:03}", kRecords / 1000, kRecords % 1000))));

  auto messages = client.pull(testing::SubscriptionName(kProject, topic + "-sub"), kRecords, 60s);
  std::map<std::int64_t, int> seen;
  int bad = 0;
  for (const auto& m : messages) {
    auto seq = m.attributes().find("seq");
    if (seq == m.attributes().end()) {
      ++bad;
      continue;
    }
    const std::int64_t n = std::stoll(seq->second);
    ++seen[n];
    if (n < 0 || n >= kRecords) {
      ++bad;
      continue;
    }
    const nlohmann::json& expected = flights[static_cast<std::size_t>(n)];
    EXPECT_EQ(nlohmann::json::parse(m.data()), expected) << "seq " << n;
    EXPECT_EQ(m.ordering_key(), expected["origin"].get<std::string>()) << "seq " << n;
  }
  std::vector<std::int64_t> missing;
  std::vector<std::int64_t> duplicated;
  for (std::int64_t i = 0; i < kRecords; ++i) {
    if (seen[i] == 0) missing.push_back(i);
    if (seen[i] > 1) duplicated.push_back(i);
  }
  EXPECT_EQ(bad, 0) << "messages without a valid seq attribute";
  EXPECT_TRUE(missing.empty()) << messages.size() << " of " << kRecords << " messages arrived in "
                               << "60 s; " << missing.size() << " seq values missing, first "
                               << (missing.empty() ? -1 : missing.front());
  // The job finished normally, so nothing was replayed: every seq exactly once.
  EXPECT_TRUE(duplicated.empty()) << duplicated.size() << " seq values arrived twice, first "
                                  << (duplicated.empty() ? -1 : duplicated.front());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gcpstream::pipeline
