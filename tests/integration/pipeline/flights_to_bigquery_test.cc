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
#include "tests/support/emulators.h"
#include "tests/support/pubsub_emulator.h"

namespace gcpstream::pipeline {
namespace {

using testing::FakeOptions;

constexpr char kFlights[] = GCPSTREAM_SOURCE_DIR "/.deps/vega-datasets-3.2.1/data/flights-20k.json";
constexpr char kExample[] = GCPSTREAM_SOURCE_DIR "/examples/pipelines/flights-to-bigquery.yaml";
constexpr char kFileLoads[] =
    GCPSTREAM_SOURCE_DIR "/examples/pipelines/flights-to-bigquery-file-loads.yaml";
constexpr char kReadBack[] =
    GCPSTREAM_SOURCE_DIR "/examples/pipelines/flights-bigquery-to-pubsub.yaml";

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs an example against `fake`, with `extra` on top of the environment it reads.
void RunExample(testing::BigQueryFake& fake, const std::map<std::string, std::string>& extra,
                runtime::JobResult& result, const char* example = kExample) {
  const auto checkpoints = std::filesystem::temp_directory_path() /
                           ("flights-to-bigquery-" + std::to_string(::getpid()));
  std::map<std::string, std::string> env = {{"FLIGHTS_FILE", kFlights},
                                            {"BIGQUERY_EMULATOR_HOST", fake.grpc_endpoint()},
                                            {"BIGQUERY_EMULATOR_REST", fake.rest_endpoint()},
                                            {"CHECKPOINT_DIR", checkpoints.string()}};
  for (const auto& [k, v] : extra) env[k] = v;
  auto spec = ParsePipelineSpec(ReadFile(example), example,
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

// examples/pipelines/flights-to-bigquery-file-loads.yaml: the same flights through staged Avro
// files and load jobs, each delayed flight once, the staged files deleted after their loads.
TEST(FlightsToBigQueryIT, TheFileLoadsExampleLoadsEveryDelayedFlightOnceAndCleansUp) {
  auto fake = testing::BigQueryFake::Start();
  ASSERT_TRUE(fake.ok()) << fake.status();
  ASSERT_TRUE((*fake)->add_dataset("gcpstream-demo", "flights").ok());
  (*fake)->add_bucket("gcpstream-demo-staging");
  runtime::JobResult result;
  ASSERT_NO_FATAL_FAILURE(RunExample(**fake, {}, result, kFileLoads));

  std::size_t delayed = 0;
  for (const auto& f : nlohmann::json::parse(ReadFile(kFlights)))
    delayed += f["delay"].get<int>() > 0;
  auto rows = (*fake)->rows("projects/gcpstream-demo/datasets/flights/tables/delays");
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::set<std::string> seqs;
  for (const auto& r : *rows) seqs.insert(r["seq"].get<std::string>());
  EXPECT_EQ(seqs.size(), delayed);
  EXPECT_EQ(rows->size(), delayed) << "FILE_LOADS writes exactly once";
  EXPECT_GE((*fake)->jobs().jobs_created(), 1);
  EXPECT_EQ((*fake)->gcs().object_count(), 0) << "staged files are deleted after their loads";
  EXPECT_GE(result.metric(kSinkNode, "filesStaged"), 1);
  auto table = (*fake)->table("gcpstream-demo", "flights", "delays");
  ASSERT_TRUE(table.ok());
  EXPECT_EQ((*table)["clustering"]["fields"][0], "origin");
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

// examples/pipelines/flights-bigquery-to-pubsub.yaml reading back the table the first example
// wrote: through the Storage Read API (the fake's), into the Pub/Sub emulator, one message per
// row, its data the row's selected columns as JSON and its origin as an attribute.
TEST(FlightsToBigQueryIT, TheReadBackExamplePublishesEveryRowOfTheTableOnce) {
  const std::string pubsub = testing::EmulatorEndpoint(testing::Emulator::kPubSub);
  ASSERT_FALSE(pubsub.empty());
  auto fake = testing::BigQueryFake::Start();
  ASSERT_TRUE(fake.ok()) << fake.status();
  ASSERT_TRUE((*fake)->add_dataset("gcpstream-demo", "flights").ok());
  runtime::JobResult written;
  ASSERT_NO_FATAL_FAILURE(RunExample(**fake, {}, written));
  auto rows = (*fake)->rows("projects/gcpstream-demo/datasets/flights/tables/delays");
  ASSERT_TRUE(rows.ok());
  FakeOptions options;
  options.read_rows_per_stream = 2000;  // several streams for the two subtasks
  (*fake)->set_options(options);

  testing::PubSubEmulatorClient client(pubsub);
  const std::string topic = testing::UniqueId("flights-readback");
  ASSERT_TRUE(client.create_topic(testing::TopicName("gcpstream-demo", topic)).ok());
  ASSERT_TRUE(client
                  .create_subscription(testing::SubscriptionName("gcpstream-demo", topic + "-sub"),
                                       testing::TopicName("gcpstream-demo", topic))
                  .ok());
  runtime::JobResult read;
  ASSERT_NO_FATAL_FAILURE(
      RunExample(**fake, {{"PUBSUB_EMULATOR_HOST", pubsub}, {"FLIGHTS_READBACK_TOPIC", topic}},
                 read, kReadBack));
  EXPECT_GE(read.metric(kSourceNode, "splitsAssigned"), 2) << "several streams";

  auto messages = client.pull(testing::SubscriptionName("gcpstream-demo", topic + "-sub"),
                              rows->size(), std::chrono::seconds(60));
  std::map<std::int64_t, int> seen;
  for (const auto& m : messages) {
    auto data = nlohmann::json::parse(m.data(), nullptr, false);
    ASSERT_FALSE(data.is_discarded()) << m.data();
    ASSERT_TRUE(data["seq"].is_number_integer()) << m.data();
    EXPECT_GT(data["delay"].get<std::int64_t>(), 0) << m.data();
    EXPECT_EQ(m.attributes().at("origin"), data["origin"]) << m.data();
    ++seen[data["seq"].get<std::int64_t>()];
  }
  EXPECT_EQ(messages.size(), rows->size());
  EXPECT_EQ(seen.size(), rows->size()) << "every row of the table, each once";
}

}  // namespace
}  // namespace gcpstream::pipeline
