// examples/pipelines/flights-to-bigquery.yaml run as a job against the BigQuery fake: every
// delayed flight of the file lands as exactly one row (STORAGE_API_EXACTLY_ONCE), in a table
// the sink created with the example's schema, partitioning and clustering.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
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

// Runs the example against `fake`, with `extra` on top of the environment it reads.
void RunExample(testing::BigQueryFake& fake, const std::map<std::string, std::string>& extra,
                runtime::JobResult& result) {
  const auto checkpoints = std::filesystem::temp_directory_path() /
                           ("flights-to-bigquery-" + std::to_string(::getpid()));
  std::map<std::string, std::string> env = {{"FLIGHTS_FILE", kFlights},
                                            {"BIGQUERY_EMULATOR_HOST", fake.grpc_endpoint()},
                                            {"BIGQUERY_EMULATOR_REST", fake.rest_endpoint()},
                                            {"CHECKPOINT_DIR", checkpoints.string()}};
  for (const auto& [k, v] : extra) env[k] = v;
  auto spec = ParsePipelineSpec(ReadFile(kExample), kExample,
                                [&](const std::string& name) -> std::optional<std::string> {
                                  auto it = env.find(name);
                                  if (it == env.end()) return std::nullopt;
                                  return it->second;
                                });
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto job = AssembleJob(*spec, RunOverrides{});
  ASSERT_TRUE(job.ok()) << job.status();
  result = (*job)->execute("flights-to-bigquery");
  std::filesystem::remove_all(checkpoints);
  ASSERT_TRUE(result.status.ok()) << result.status;
}

TEST(FlightsToBigQueryIT, EveryDelayedFlightLandsAsOneRowInTheTableTheSinkCreated) {
  auto fake = testing::BigQueryFake::Start();
  ASSERT_TRUE(fake.ok()) << fake.status();
  ASSERT_TRUE((*fake)->add_dataset("gcpstream-demo", "flights").ok());
  runtime::JobResult result;
  ASSERT_NO_FATAL_FAILURE(RunExample(**fake, {}, result));

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
}

// The same example with `table: delays_{origin}`: each record goes to the table of its origin,
// each created at its first row, every delayed flight once across them.
TEST(FlightsToBigQueryIT, ATableTemplateWritesEachFlightIntoItsOriginsTable) {
  auto fake = testing::BigQueryFake::Start();
  ASSERT_TRUE(fake.ok()) << fake.status();
  ASSERT_TRUE((*fake)->add_dataset("gcpstream-demo", "flights").ok());
  runtime::JobResult result;
  ASSERT_NO_FATAL_FAILURE(RunExample(**fake, {{"BIGQUERY_TABLE", "delays_{origin}"}}, result));

  std::map<std::string, std::size_t> per_origin;
  for (const auto& f : nlohmann::json::parse(ReadFile(kFlights))) {
    if (f["delay"].get<int>() > 0) ++per_origin[f["origin"].get<std::string>()];
  }
  std::size_t wrong = 0;
  for (const auto& [origin, want] : per_origin) {
    auto rows = (*fake)->rows("projects/gcpstream-demo/datasets/flights/tables/delays_" + origin);
    const std::size_t got = rows.ok() ? rows->size() : 0;
    std::set<std::string> seqs;
    if (rows.ok()) {
      for (const auto& r : *rows) {
        seqs.insert(r["seq"].get<std::string>());
        EXPECT_EQ(r["origin"], origin);
      }
    }
    if ((got != want || seqs.size() != want) && ++wrong <= 3) {
      ADD_FAILURE() << "delays_" << origin << ": " << got << " rows (" << seqs.size()
                    << " distinct), want " << want;
    }
  }
  EXPECT_EQ(wrong, 0u) << "of " << per_origin.size() << " origin tables";
  EXPECT_GE(result.metric(kSinkNode, "tablesCreated"), 2);
}

}  // namespace
}  // namespace gcpstream::pipeline
