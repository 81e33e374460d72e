// The bigtable_change_stream source of a pipeline file: what it accepts, the errors naming the
// key, the mutation as record fields, the example pipeline, describe and lineage.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/pipeline/bigtable_change_stream_source_factory.h"
#include "gcpstream/pipeline/describe.h"
#include "gcpstream/pipeline/spec_parser.h"

namespace gcpstream::pipeline {
namespace {

using ::testing::HasSubstr;

std::string File(const std::string& source_extra) {
  return R"(name: t
source:
  type: bigtable_change_stream
  project: p
  instance: inst
  table: orders
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

TEST(BigtableChangeStreamSpec, OptionsAreReadWithTheirDefaults) {
  auto spec =
      Parse(File("  app_profile_id: cdc\n  start_position: -5m\n  end_time: 2026-12-01T00:00:00Z\n"
                 "  max_concurrent_streams_per_subtask: 4\n  family_include_list: [orders, audit]\n"
                 "  qualifier_exclude_list: ['orders:dGVtcG9yYXJ5']\n"
                 "  emulator_endpoint: 127.0.0.1:8124\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& c = std::get<BigtableChangeStreamSourceSpec>(spec->source);
  EXPECT_EQ(c.app_profile_id, "cdc");
  EXPECT_EQ(c.options.start_position.describe(), "relative 5m ago");
  ASSERT_TRUE(c.options.end_time.has_value());
  EXPECT_EQ(c.options.max_concurrent_streams_per_subtask, 4);
  EXPECT_THAT(c.options.filters.family_include, ::testing::ElementsAre("orders", "audit"));
  EXPECT_FALSE(c.options.filters.skip_messages_without_change);
  ASSERT_TRUE(MakePipelineSource(spec->source).ok());
  auto described = DescribePipeline(*spec);
  ASSERT_TRUE(described.ok());
  EXPECT_THAT(*described,
              HasSubstr("bigtable change stream of projects/p/instances/inst/tables/"
                        "orders from relative 5m ago to 2026-12-01T00:00:00Z, bounded"));
  auto lineage = PipelineLineage(*spec);
  ASSERT_FALSE(lineage.empty());
  EXPECT_EQ(lineage[0].second.connector, "bigtable");
  EXPECT_TRUE(lineage[0].second.bounded);
}

TEST(BigtableChangeStreamSpec, MistakesNameTheirKey) {
  struct Case {
    std::string extra;
    std::string expect;
  };
  for (const auto& c : std::vector<Case>{
           {"", "app_profile_id"},
           {"  app_profile_id: x\n  start_position: yesterday\n", "start_position"},
           {"  app_profile_id: x\n  end_time: soon\n", "end_time"},
           {"  app_profile_id: x\n  max_concurrent_streams_per_subtask: 0\n",
            "max_concurrent_streams_per_subtask"},
           {"  app_profile_id: x\n  family_include_list: [a]\n  family_exclude_list: [b]\n",
            "family_exclude_list"},
           {"  app_profile_id: x\n  qualifier_include_list: ['(']\n", "qualifier_include_list"},
       }) {
    auto spec = Parse(File(c.extra));
    ASSERT_FALSE(spec.ok()) << c.extra;
    EXPECT_THAT(spec.status().message(), HasSubstr(c.expect)) << c.extra;
  }
}

TEST(BigtableChangeStreamSpec, AMutationBecomesOneRecordWithEveryByteKept) {
  using namespace bigtable;
  BigtableChangeStreamMutation m(
      std::string("row\xff", 4), ChangeStreamMutationType::kUser, "c1",
      absl::FromUnixMillis(1'700'000'000'123), 3, "tok", absl::FromUnixMillis(1'700'000'000'000),
      {SetCellEntry{"f", "q", 1000, "text"}, SetCellEntry{"f", "bin", 2000, std::string("\x80", 1)},
       DeleteCellsEntry{"f", "old", 0, 5000}, DeleteFamilyEntry{"g"},
       AddToCellEntry{"sum", "n", 0, ChangeStreamValue{ChangeStreamValue::Type::kInt64, 5, ""}}});
  PipelineRecord r = ChangeStreamMutationToPipelineRecord(m);
  EXPECT_FALSE(r.fields.contains("_row_key"));
  EXPECT_EQ(r.fields["_row_key_base64"], "cm93/w==");
  EXPECT_EQ(r.fields["_mod_type"], "USER");
  EXPECT_EQ(r.fields["_commit_timestamp"], "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(r.fields["_tiebreaker"], 3);
  EXPECT_EQ(*r.event_time_ms, 1'700'000'000'123);
  const auto& e = r.fields["_entries"];
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[0]["kind"], "SET_CELL");
  EXPECT_EQ(e[0]["value"], "text");
  EXPECT_EQ(e[1]["value_base64"], "gA==");
  EXPECT_EQ(e[2]["kind"], "DELETE_CELLS");
  EXPECT_EQ(e[2]["end_micros"], 5000);
  EXPECT_EQ(e[3]["kind"], "DELETE_FAMILY");
  EXPECT_FALSE(e[3].contains("qualifier"));
  EXPECT_EQ(e[4]["input"], 5);
  EXPECT_EQ(e[4]["input_type"], "INT64");
}

TEST(BigtableChangeStreamSpec, TheExamplePipelineParses) {
  auto spec = LoadPipelineSpec(
      std::string(GCPSTREAM_SOURCE_DIR) + "/examples/pipelines/bigtable-changes-to-pubsub.yaml",
      [](const std::string&) { return std::nullopt; });
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& c = std::get<BigtableChangeStreamSourceSpec>(spec->source);
  EXPECT_EQ(c.table, "flight-changes");
  EXPECT_EQ(c.options.start_position.describe(), "relative 1m ago");
  EXPECT_TRUE(MakePipelineSource(spec->source).ok());
}

}  // namespace
}  // namespace gcpstream::pipeline
