// Generated flights for the pipeline tests, and reading a whole file.
#ifndef GCPSTREAM_TESTS_INTEGRATION_PIPELINE_FLIGHTS_DATA_H_
#define GCPSTREAM_TESTS_INTEGRATION_PIPELINE_FLIGHTS_DATA_H_

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "tests/support/emulators.h"
#include "tests/support/pubsub_emulator.h"

namespace gcpstream::testing {

// `n` (>= 2) flights shaped like vega-datasets' flights-20k.json, the last two sharing (date,
// origin, destination) as two records of the real file do.
inline nlohmann::json Flights(int n) {
  const char* airports[] = {"DTW", "LAS", "HNL", "SFO", "OAK", "PHX", "DFW", "AUS"};
  nlohmann::json out = nlohmann::json::array();
  for (int i = 0; i < n; ++i) {
    out.push_back({{"date", fmt::format("2001/01/{:02} {:02}:{:02}", 1 + i % 28, i % 24, i % 60)},
                   {"delay", (i * 7) % 90 - 10},
                   {"distance", 100 + (i * 13) % 2400},
                   {"origin", airports[i % 8]},
                   {"destination", airports[(i + 3) % 8]}});
  }
  out[n - 1] = out[n - 2];  // the duplicate key
  return out;
}

// A fresh folder under the system temp folder (named after `prefix`) holding `flights` as
// flights.json.
inline std::filesystem::path WriteFlightsFolder(const std::string& prefix,
                                                const nlohmann::json& flights) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / UniqueId(prefix);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "flights.json") << flights.dump();
  return dir;
}

// Topic `topic` of `project` and subscription `subscription` on it.
inline absl::Status CreateTopicAndSubscription(PubSubEmulatorClient& client,
                                               const std::string& project, const std::string& topic,
                                               const std::string& subscription, bool ordering) {
  if (absl::Status s = client.create_topic(TopicName(project, topic)); !s.ok()) return s;
  return client.create_subscription(SubscriptionName(project, subscription),
                                    TopicName(project, topic), ordering);
}

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_INTEGRATION_PIPELINE_FLIGHTS_DATA_H_
