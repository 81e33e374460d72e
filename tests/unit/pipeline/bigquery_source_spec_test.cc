// The bigquery source of a pipeline file: what it accepts, the errors naming the key, a row as
// record fields, the example pipeline, describe and lineage.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/pipeline/bigquery_source_factory.h"
#include "gcpstream/pipeline/describe.h"
#include "gcpstream/pipeline/spec_parser.h"

namespace gcpstream::pipeline {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string File(const std::string& source_extra) {
  return R"(name: t
source:
  type: bigquery
  project: p
  dataset: flights
  table: delays
)" + source_extra +
         R"(sink:
  type: pubsub
  project: p
  topic: out
)";
}

absl::StatusOr<PipelineSpec> Parse(const std::string& text) {
  return ParsePipelineSpec(text, "p.yaml",
                           [](const std::string&) -> std::optional<std::string> { return ""; });
}

// A mistake in the source section: what it adds, and what the refusal must say.
struct Mistake {
  std::string extra;
  std::string expect;
};

// Each `make(extra)` file is refused with a message that holds `expect`.
void ExpectEachRefused(const std::vector<Mistake>& mistakes,
                       std::string (*make)(const std::string&)) {
  for (const auto& c : mistakes) {
    auto spec = Parse(make(c.extra));
    ASSERT_FALSE(spec.ok()) << c.extra;
    EXPECT_THAT(spec.status().message(), HasSubstr(c.expect)) << c.extra;
  }
}

TEST(BigQuerySourceSpec, OptionsAreReadWithTheirDefaults) {
  auto spec =
      Parse(File("  selected_fields: [seq, origin]\n  row_restriction: \"delay > 10\"\n"
                 "  snapshot_time: 2026-08-09T10:00:00Z\n  max_stream_count: 8\n"
                 "  preferred_min_stream_count: 4\n  max_records_per_fetch: 500\n"
                 "  parent_project: billing\n  emulator_endpoint: 127.0.0.1:9060\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& q = std::get<BigQuerySourceSpec>(spec->source);
  EXPECT_THAT(q.selected_fields, ElementsAre("seq", "origin"));
  EXPECT_EQ(q.row_restriction, "delay > 10");
  EXPECT_EQ(q.snapshot_time_us, 1786269600000000);
  EXPECT_EQ(q.max_stream_count, 8);
  EXPECT_EQ(q.preferred_min_stream_count, 4);
  EXPECT_EQ(q.max_records_per_fetch, 500);
  EXPECT_EQ(q.retry_max_attempts, 25);
  EXPECT_EQ(q.parent_project, "billing");
  ASSERT_TRUE(MakePipelineSource(spec->source).ok());
  auto described = DescribePipeline(*spec);
  ASSERT_TRUE(described.ok());
  EXPECT_THAT(*described,
              HasSubstr("bigquery projects/p/datasets/flights/tables/delays columns seq, origin, "
                        "where delay > 10, as of 2026-08-09T10:00:00+00:00"));
  auto lineage = PipelineLineage(*spec);
  ASSERT_FALSE(lineage.empty());
  EXPECT_EQ(lineage[0].second.connector, "bigquery");
  EXPECT_TRUE(lineage[0].second.bounded);
  auto defaults = Parse(File(""));
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  const auto& d = std::get<BigQuerySourceSpec>(defaults->source);
  EXPECT_EQ(d.max_records_per_fetch, 10000);
  EXPECT_EQ(d.max_stream_count, 0);
  EXPECT_FALSE(d.snapshot_time_us.has_value());
}

TEST(BigQuerySourceSpec, MistakesNameTheirKey) {
  ExpectEachRefused(
      {
          {"  snapshot_time: yesterday\n", "snapshot_time"},
          {"  max_stream_count: 2\n  preferred_min_stream_count: 3\n",
           "preferred_min_stream_count"},
          {"  selected_fields: [a, A]\n", "selected_fields"},
          {"  max_records_per_fetch: 0\n", "max_records_per_fetch"},
          {"  retry_max_attempts: 0\n", "retry_max_attempts"},
          {"  max_stream_count: -1\n", "max_stream_count"},
          {"  columns: [a]\n", "columns"},
      },
      File);
  // An id the builder would refuse is reported at its key, whatever else the file sets.
  for (const char* bad : {"table: 'a/b'", "table: 'tables/x'"}) {
    auto refused = Parse(std::string("name: t\nsource: {type: bigquery, project: p, dataset: d, ") +
                         bad + "}\nsink: {type: pubsub, project: p, topic: out}\n");
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_THAT(refused.status().message(), HasSubstr("source.table")) << bad;
  }
  auto micros = Parse(File("  snapshot_time: 2026-08-09T10:00:00.123456Z\n"));
  ASSERT_TRUE(micros.ok()) << micros.status();
  EXPECT_EQ(std::get<BigQuerySourceSpec>(micros->source).snapshot_time_us, 1786269600123456)
      << "the snapshot keeps its microseconds";
  auto bad_dataset = Parse(R"(name: t
source: {type: bigquery, project: p, dataset: "no-dashes", table: t}
sink: {type: pubsub, project: p, topic: out}
)");
  ASSERT_FALSE(bad_dataset.ok());
  EXPECT_THAT(bad_dataset.status().message(), HasSubstr("dataset"));
}

std::string QueryFile(const std::string& source_extra) {
  return R"(name: nightly-report
source:
  type: bigquery
  project: p
  query: "SELECT id FROM `p.d.t` WHERE id > 3"
)" + source_extra +
         R"(sink:
  type: pubsub
  project: p
  topic: out
)";
}

TEST(BigQuerySourceSpec, AQuerySourceTakesTheJobOptionsAndThePipelineName) {
  auto spec =
      Parse(QueryFile("  query_location: EU\n  query_result_dataset: results\n"
                      "  reuse_query_result_within: 2h\n  emulator_endpoint: 127.0.0.1:9060\n"
                      "  emulator_rest_endpoint: http://127.0.0.1:9061\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& q = std::get<BigQuerySourceSpec>(spec->source);
  EXPECT_EQ(q.query, "SELECT id FROM `p.d.t` WHERE id > 3");
  EXPECT_EQ(q.project, "p");
  EXPECT_TRUE(q.dataset.empty());
  EXPECT_EQ(q.query_location, "EU");
  EXPECT_EQ(q.query_result_dataset, "results");
  EXPECT_EQ(q.reuse_query_result_within, std::chrono::hours(2));
  EXPECT_EQ(q.job_name, "nightly-report") << "the reusable job id is derived from the name";
  auto source = MakePipelineSource(spec->source);
  ASSERT_TRUE(source.ok()) << source.status();
  auto described = DescribePipeline(*spec);
  ASSERT_TRUE(described.ok());
  EXPECT_THAT(*described,
              HasSubstr("query \"SELECT id FROM `p.d.t` WHERE id > 3\" (run once as a query job "
                        "in project p at EU, the same job reused by attempts within 2h; its "
                        "result table read)"));
  auto lineage = PipelineLineage(*spec);
  ASSERT_FALSE(lineage.empty());
  EXPECT_TRUE(lineage[0].second.datasets.empty()) << "the result table is known only at run time";
}

TEST(BigQuerySourceSpec, QueryMistakesNameTheirKey) {
  ExpectEachRefused(
      {
          {"  dataset: d\n", "drop `dataset` and `table`"},
          {"  snapshot_time: 2026-08-09T10:00:00Z\n", "source.snapshot_time"},
          {"  snapshot_time: 2026-08-09T10:00:00Z\n", "FOR SYSTEM_TIME AS OF"},
          {"  reuse_query_result_within: 1h\n", "source.reuse_query_result_within"},
          {"  reuse_query_result_within: 1h\n", "needs query_location"},
          {"  query_location: EU\n  reuse_query_result_within: 25h\n", "reuse_query_result_within"},
          {"  query_result_dataset: a.b\n", "source.query_result_dataset"},
          {"  query_location: \"US EAST\"\n", "source.query_location"},
          {"  emulator_rest_endpoint: localhost\n", "emulator_rest_endpoint"},
          {"  emulator_rest_endpoint: http://127.0.0.1:9\n", "goes with emulator_endpoint"},
          {"  emulator_endpoint: 127.0.0.1:9\n  emulator_rest_endpoint: http://127.0.0.1:0\n",
           "port 0 is not 1..65535"},
          {"  parent_project: billing\n", "drop `parent_project`"},
      },
      QueryFile);
  for (const char* key : {"  query_location: EU\n", "  query_result_dataset: results\n",
                          "  reuse_query_result_within: 1h\n",
                          "  emulator_endpoint: 127.0.0.1:9\n  emulator_rest_endpoint: "
                          "http://127.0.0.1:9\n"}) {
    auto on_a_table = Parse(File(key));
    ASSERT_FALSE(on_a_table.ok()) << "a key of the query job only: " << key;
    EXPECT_THAT(on_a_table.status().message(), HasSubstr("materialize_views: true")) << key;
    EXPECT_THAT(on_a_table.status().message(), Not(HasSubstr("unknown key"))) << key;
  }
}

TEST(BigQuerySourceSpec, ATableSourceWithMaterializeViewsTakesTheQueryJobOptions) {
  auto spec = Parse(File(
      "  materialize_views: true\n  query_location: EU\n  query_result_dataset: results\n"
      "  emulator_endpoint: 127.0.0.1:9060\n  emulator_rest_endpoint: http://127.0.0.1:9061\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& q = std::get<BigQuerySourceSpec>(spec->source);
  EXPECT_TRUE(q.materialize_views);
  EXPECT_EQ(q.table, "delays");
  EXPECT_EQ(q.query_location, "EU");
  EXPECT_EQ(q.query_result_dataset, "results");
  auto source = MakePipelineSource(spec->source);
  ASSERT_TRUE(source.ok()) << source.status();
  auto described = DescribePipeline(*spec);
  ASSERT_TRUE(described.ok());
  EXPECT_THAT(*described, HasSubstr("bigquery projects/p/datasets/flights/tables/delays (a view is "
                                    "read through a query job selecting from it)"));
  ExpectEachRefused(
      {
          {"  materialize_views: true\n  snapshot_time: 2026-08-09T10:00:00Z\n",
           "source.snapshot_time"},
          {"  materialize_views: true\n  reuse_query_result_within: 1h\n", "needs query_location"},
          {"  materialize_views: maybe\n", "source.materialize_views"},
          {"  materialize_views: false\n  query_location: EU\n", "query_location"},
      },
      File);
}

TEST(BigQuerySourceSpec, ARowBecomesOneRecordOfItsColumns) {
  bigquery::BigQueryReadRow row;
  auto schema = std::make_shared<bigquery::TableSchema>();
  for (auto [name, type] : {std::pair{"seq", bigquery::FieldType::kInt64},
                            std::pair{"origin", bigquery::FieldType::kString},
                            std::pair{"at", bigquery::FieldType::kTimestamp}}) {
    bigquery::TableFieldSchema f;
    f.name = name;
    f.type = type;
    schema->fields.push_back(f);
  }
  row.schema = schema;
  row.values = {bigquery::BigQueryValue::Int64(17), bigquery::BigQueryValue::String("SFO"),
                bigquery::BigQueryValue()};
  PipelineRecord record = BigQueryReadRowToPipelineRecord(row);
  EXPECT_EQ(record.fields["seq"], 17);
  EXPECT_EQ(record.fields["origin"], "SFO");
  EXPECT_TRUE(record.fields["at"].is_null());
  EXPECT_EQ(record.lookup("origin"), "SFO");
  EXPECT_FALSE(record.event_time_ms.has_value());
}

TEST(BigQuerySourceSpec, TheExamplePipelineParses) {
  auto spec = LoadPipelineSpec(
      std::string(GCPSTREAM_SOURCE_DIR) + "/examples/pipelines/flights-bigquery-to-pubsub.yaml",
      [](const std::string&) { return std::nullopt; });
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& q = std::get<BigQuerySourceSpec>(spec->source);
  EXPECT_EQ(q.table, "delays");
  EXPECT_EQ(q.row_restriction, "delay > 0");
  EXPECT_TRUE(MakePipelineSource(spec->source).ok());
}

}  // namespace
}  // namespace gcpstream::pipeline
