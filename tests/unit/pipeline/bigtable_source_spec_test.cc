// The bigtable (scan) source of a pipeline file: what it accepts, the errors naming the key, a
// row as record fields, the example pipeline, describe and lineage.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/pipeline/bigtable_source_factory.h"
#include "gcpstream/pipeline/describe.h"
#include "gcpstream/pipeline/spec_parser.h"

namespace gcpstream::pipeline {
namespace {

using ::testing::HasSubstr;

std::string File(const std::string& source_extra) {
  return R"(name: t
source:
  type: bigtable
  project: p
  instance: inst
  table: flights
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

TEST(BigtableSourceSpec, OptionsAreReadWithTheirDefaults) {
  auto spec = Parse(
      File("  row_ranges:\n    - {start: 'ATL#', end: 'ATL$'}\n    - {start: 'SFO#'}\n"
           "  prefixes: ['JFK#']\n  row_keys: ['LAX#1']\n  family: f\n  app_profile_id: batch\n"
           "  max_rows_per_fetch: 50\n  emulator_endpoint: 127.0.0.1:8086\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& b = std::get<BigtableSourceSpec>(spec->source);
  ASSERT_EQ(b.row_ranges.size(), 2u);
  EXPECT_EQ(b.row_ranges[1], (std::pair<std::string, std::string>{"SFO#", ""}));
  EXPECT_THAT(b.prefixes, ::testing::ElementsAre("JFK#"));
  EXPECT_THAT(b.row_keys, ::testing::ElementsAre("LAX#1"));
  EXPECT_EQ(b.family, "f");
  EXPECT_EQ(b.app_profile_id, "batch");
  EXPECT_EQ(b.max_rows_per_fetch, 50);
  EXPECT_EQ(b.max_bytes_per_fetch, 8 << 20);
  ASSERT_TRUE(MakePipelineSource(spec->source).ok());
  auto described = DescribePipeline(*spec);
  ASSERT_TRUE(described.ok());
  EXPECT_THAT(*described, HasSubstr("bigtable projects/p/instances/inst/tables/flights "
                                    "[ATL#, ATL$), [SFO#, *), prefix JFK#, key LAX#1, family f"));
  auto lineage = PipelineLineage(*spec);
  ASSERT_FALSE(lineage.empty());
  EXPECT_EQ(lineage[0].second.connector, "bigtable");
  EXPECT_TRUE(lineage[0].second.bounded);
  auto whole = Parse(File(""));
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_THAT(*DescribePipeline(*whole), HasSubstr("flights whole table"));
}

TEST(BigtableSourceSpec, MistakesNameTheirKey) {
  struct Case {
    std::string extra;
    std::string expect;
  };
  for (const auto& c : std::vector<Case>{
           {"  row_ranges:\n    - {start: b, end: a}\n", "row_ranges[0].end"},
           {"  row_ranges:\n    - {start: a, stop: b}\n", "stop"},
           {"  row_ranges: a..b\n", "row_ranges"},
           {"  app_profile_id: 'no spaces'\n", "app_profile_id"},
           {"  max_rows_per_fetch: 0\n", "max_rows_per_fetch"},
           {"  max_bytes_per_fetch: 0\n", "max_bytes_per_fetch"},
           {"  columns: [a]\n", "columns"},
       }) {
    auto spec = Parse(File(c.extra));
    ASSERT_FALSE(spec.ok()) << c.extra;
    EXPECT_THAT(spec.status().message(), HasSubstr(c.expect)) << c.extra;
  }
}

TEST(BigtableSourceSpec, ARowBecomesOneRecordWithTheNewestValueOfEachColumn) {
  bigtable::BigtableRow row;
  row.key = "ATL#2001/01/14#3";
  row.cells = {{"f", "delay", 20, "14", {}},
               {"f", "delay", 10, "99", {}},
               {"f", "raw", 5, std::string("\xff\x00", 2), {}},
               {"g", "x", 1, "y", {}}};
  PipelineRecord by_family = BigtableRowToPipelineRecord(row, std::string("f"));
  EXPECT_EQ(by_family.fields["_row_key"], "ATL#2001/01/14#3");
  EXPECT_EQ(by_family.fields["delay"], "14");
  EXPECT_EQ(by_family.fields["raw_base64"], "/wA=");
  PipelineRecord all = BigtableRowToPipelineRecord(row, std::nullopt);
  EXPECT_EQ(all.fields["f:delay"], "14");
  EXPECT_EQ(all.fields["g:x"], "y");
  EXPECT_FALSE(all.event_time_ms.has_value());
}

TEST(BigtableSourceSpec, TheExamplePipelineParses) {
  auto spec = LoadPipelineSpec(
      std::string(GCPSTREAM_SOURCE_DIR) + "/examples/pipelines/flights-bigtable-to-pubsub.yaml",
      [](const std::string&) { return std::nullopt; });
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& b = std::get<BigtableSourceSpec>(spec->source);
  EXPECT_EQ(b.table, "flights");
  EXPECT_EQ(b.family, "f");
  EXPECT_TRUE(MakePipelineSource(spec->source).ok());
}

}  // namespace
}  // namespace gcpstream::pipeline
