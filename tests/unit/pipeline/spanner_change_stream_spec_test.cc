// The spanner_change_stream source of a pipeline file: what it accepts, the errors naming the
// key, the change as record fields, the example pipeline, describe and lineage.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/pipeline/describe.h"
#include "gcpstream/pipeline/spanner_change_stream_source_factory.h"
#include "gcpstream/pipeline/spec_parser.h"
#include "gcpstream/spanner/client/value.h"

namespace gcpstream::pipeline {
namespace {

using ::testing::HasSubstr;

std::string File(const std::string& source_extra) {
  return R"(name: t
source:
  type: spanner_change_stream
  project: p
  instance: inst
  database: flights
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

TEST(SpannerChangeStreamSpec, OptionsAreReadWithTheirDefaults) {
  auto spec = Parse(
      File("  change_stream: FlightsChanges\n  start_position: 2026-12-01T00:00:00Z\n"
           "  resume_fallback: latest\n  heartbeat_interval: 5s\n  rpc_priority: LOW\n"
           "  max_concurrent_queries_per_subtask: 3\n  table_include_list: [Flights]\n"
           "  column_exclude_list: ['Flights\\.Secret']\n  skip_messages_without_change: true\n"
           "  emulator_endpoint: 127.0.0.1:9010\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& c = std::get<SpannerChangeStreamSourceSpec>(spec->source);
  EXPECT_EQ(c.change_stream, "FlightsChanges");
  EXPECT_EQ(c.options.start_position.describe(), "absolute 2026-12-01T00:00:00Z");
  ASSERT_TRUE(c.options.resume_fallback.has_value());
  EXPECT_EQ(c.options.resume_fallback->describe(), "latest");
  EXPECT_EQ(c.options.heartbeat_interval, std::chrono::seconds(5));
  EXPECT_EQ(c.options.max_concurrent_queries_per_subtask, 3);
  EXPECT_EQ(c.options.absent_retention_fallback, absl::Hours(24 * 7));
  EXPECT_THAT(c.options.filters.column_exclude, ::testing::ElementsAre("Flights\\.Secret"));
  EXPECT_TRUE(c.options.filters.skip_messages_without_change);
  ASSERT_TRUE(MakePipelineSource(spec->source).ok());
  auto described = DescribePipeline(*spec);
  ASSERT_TRUE(described.ok());
  EXPECT_THAT(*described, HasSubstr("spanner change stream FlightsChanges"));
  auto lineage = PipelineLineage(*spec);
  ASSERT_FALSE(lineage.empty());
  EXPECT_EQ(lineage[0].second.datasets.at(0).name, "flights/changeStreams/FlightsChanges");
  EXPECT_FALSE(lineage[0].second.bounded);

  auto relative = Parse(File("  change_stream: S\n  start_position: -10m\n"));
  ASSERT_TRUE(relative.ok()) << relative.status();
  EXPECT_EQ(
      std::get<SpannerChangeStreamSourceSpec>(relative->source).options.start_position.describe(),
      "relative 10m ago");
}

TEST(SpannerChangeStreamSpec, MistakesNameTheirKey) {
  auto missing = Parse(File(""));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("change_stream"));
  auto bad_name = Parse(File("  change_stream: \"x; DROP TABLE y\"\n"));
  ASSERT_FALSE(bad_name.ok());
  EXPECT_THAT(bad_name.status().message(), HasSubstr("not a plain identifier"));
  auto bad_start = Parse(File("  change_stream: S\n  start_position: yesterday\n"));
  ASSERT_FALSE(bad_start.ok());
  EXPECT_THAT(bad_start.status().message(), HasSubstr("start_position"));
  auto both =
      Parse(File("  change_stream: S\n  table_include_list: [A]\n"
                 "  table_exclude_list: [B]\n"));
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(both.status().message(), HasSubstr("table_include_list and table_exclude_list"));
  // A bad pattern in an include list names that list (it used to throw for the absent exclude
  // list's key).
  auto bad_pattern = Parse(File("  change_stream: S\n  column_include_list: ['(']\n"));
  ASSERT_FALSE(bad_pattern.ok());
  EXPECT_THAT(bad_pattern.status().message(), HasSubstr("column_include_list"));
  auto forever = Parse(File("  change_stream: S\n  start_position: -inf\n"));
  ASSERT_FALSE(forever.ok());
  EXPECT_THAT(forever.status().message(), HasSubstr("start_position"));
  auto many = Parse(File("  change_stream: S\n  max_concurrent_queries_per_subtask: 101\n"));
  ASSERT_FALSE(many.ok());
  EXPECT_THAT(many.status().message(), HasSubstr("max_concurrent_queries_per_subtask"));
  auto beat = Parse(File("  change_stream: S\n  heartbeat_interval: 10min\n"));
  ASSERT_FALSE(beat.ok());
  EXPECT_THAT(beat.status().message(), HasSubstr("heartbeat_interval"));
}

TEST(SpannerChangeStreamSpec, EachModBecomesARecord) {
  spanner::DataChangeRecord r;
  r.table_name = "Flights";
  r.mod_type = "UPDATE";
  r.commit_timestamp = absl::FromUnixMillis(1'700'000'000'123);
  r.server_transaction_id = "tx";
  r.record_sequence = "00000002";
  r.mods = {{R"({"Id":"f1"})", R"({"Delay":"7"})", R"({"Delay":"3"})"},
            {R"({"Id":"f2"})", R"({})", std::nullopt}};
  auto records = DataChangeRecordToPipelineRecords(r);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 2u);
  const auto& first = (*records)[0];
  EXPECT_EQ(first.fields["Id"], "f1");
  EXPECT_EQ(first.fields["Delay"], "7");
  EXPECT_EQ(first.fields["_old_values"]["Delay"], "3");
  EXPECT_EQ(first.fields["_mod_type"], "UPDATE");
  EXPECT_EQ(first.fields["_commit_timestamp"], "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(*first.event_time_ms, 1'700'000'000'123);
  EXPECT_FALSE((*records)[1].fields.contains("_old_values")) << "absent stays absent";
  EXPECT_EQ((*records)[1].fields["_mod_index"], 1);
  r.mods = {{R"({"Id":"f1"})", R"([1])", std::nullopt}};
  EXPECT_EQ(DataChangeRecordToPipelineRecords(r).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SpannerChangeStreamSpec, TheExamplePipelineParses) {
  auto spec = LoadPipelineSpec(std::string(GCPSTREAM_SOURCE_DIR) +
                                   "/examples/pipelines/flights-spanner-changes-to-bigtable.yaml",
                               [](const std::string&) { return std::nullopt; });
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& c = std::get<SpannerChangeStreamSourceSpec>(spec->source);
  EXPECT_EQ(c.change_stream, "FlightsChanges");
  EXPECT_EQ(c.options.start_position.describe(), "relative 10m ago");
  EXPECT_TRUE(MakePipelineSource(spec->source).ok());
}

}  // namespace
}  // namespace gcpstream::pipeline
