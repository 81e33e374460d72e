// examples/pipelines/flights-to-bigquery.yaml run as a job against the BigQuery fake: every
// delayed flight of the file lands as exactly one row (STORAGE_API_EXACTLY_ONCE), in a table
// the sink created with the example's schema, partitioning and clustering.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "gcpstream/pipeline/pipeline_job.h"
#include "gcpstream/pipeline/spec_parser.h"
#include "tests/fakes/bigquery/bigquery_fake.h"

namespace gcpstream::pipeline {
namespace {

constexpr char kFlights[] = GCPSTREAM_SOURCE_DIR "/.deps/vega-datasets-3.2.1/data/flights-20k.json";
constexpr char kExample[] = GCPSTREAM_SOURCE_DIR "/examples/pipelines/flights-to-bigquery.yaml";

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(FlightsToBigQueryIT, EveryDelayedFlightLandsAsOneRowInTheTableTheSinkCreated) {
  auto fake = testing::BigQueryFake::Start();
  ASSERT_TRUE(fake.ok()) << fake.status();
  ASSERT_TRUE((*fake)->add_dataset("gcpstream-demo", "flights").ok());
  const auto checkpoints = std::filesystem::temp_directory_path() /
                           ("flights-to-bigquery-" + std::to_string(::getpid()));
  const std::map<std::string, std::string> env = {
      {"FLIGHTS_FILE", kFlights},
      {"BIGQUERY_EMULATOR_HOST", (*fake)->grpc_endpoint()},
      {"BIGQUERY_EMULATOR_REST", (*fake)->rest_endpoint()},
      {"CHECKPOINT_DIR", checkpoints.string()}};
  auto spec = ParsePipelineSpec(ReadFile(kExample), kExample,
                                [&](const std::string& name) -> std::optional<std::string> {
                                  auto it = env.find(name);
                                  if (it == env.end()) return std::nullopt;
                                  return it->second;
                                });
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto job = AssembleJob(*spec, RunOverrides{});
  ASSERT_TRUE(job.ok()) << job.status();
  auto result = (*job)->execute("flights-to-bigquery");
  ASSERT_TRUE(result.status.ok()) << result.status;

  const auto flights = nlohmann::json::parse(ReadFile(kFlights));
  std::size_t delayed = 0;
  for (const auto& f : flights) delayed += f["delay"].get<int>() > 0;
  auto rows = (*fake)->rows("projects/gcpstream-demo/datasets/flights/tables/delays");
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::set<std::string> seqs;
  for (const auto& r : *rows) seqs.insert(r["seq"].get<std::string>());
  EXPECT_EQ(seqs.size(), delayed) << rows->size() << " rows";
  EXPECT_EQ(rows->size(), delayed) << "the example writes exactly once";
  auto table = (*fake)->table("gcpstream-demo", "flights", "delays");
  ASSERT_TRUE(table.ok());
  EXPECT_EQ((*table)["clustering"]["fields"][0], "origin");
  EXPECT_EQ((*table)["timePartitioning"]["type"], "DAY");
  std::filesystem::remove_all(checkpoints);
}

}  // namespace
}  // namespace gcpstream::pipeline
