// The spanner sink and transform.to_spanner of a pipeline file: what they accept, the errors
// naming the key, and the mutation a record becomes (types read from text, NULL from a null
// field, the example pipeline).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/pipeline/describe.h"
#include "gcpstream/pipeline/spanner_mutation_mapper.h"
#include "gcpstream/pipeline/spec_parser.h"

namespace gcpstream::pipeline {
namespace {

using ::testing::HasSubstr;
namespace sp = google::spanner::v1;

// `columns` goes under to_spanner.columns, `sink_extra` under sink (both indented).
std::string File(const std::string& columns, const std::string& sink_extra = "",
                 const std::string& operation = "") {
  return R"(name: t
source:
  type: file
  path: /tmp/in.json
transform:
  to_spanner:
    table: Flights
)" + operation +
         "    columns:\n" + columns + R"(sink:
  type: spanner
  project: p
  instance: inst
  database: flights
)" + sink_extra;
}

absl::StatusOr<PipelineSpec> Parse(const std::string& text) {
  return ParsePipelineSpec(text, "p.yaml",
                           [](const std::string&) -> std::optional<std::string> { return ""; });
}

PipelineRecord Flight() {
  PipelineRecord r;
  r.fields = nlohmann::json{{"origin", "SFO"}, {"seq", 7},           {"delay", 12},
                            {"late", true},    {"note", nullptr},    {"info", {{"gate", "B2"}}},
                            {"ratio", 0.25},   {"day", "2001-01-02"}};
  return r;
}

TEST(SpannerSpec, ColumnsAreTemplatesOrTypedValuesAndTheRecordFillsThem) {
  auto spec =
      Parse(File("      Id: \"{origin}#{seq}\"\n"
                 "      Origin: origin\n"
                 "      Delay: {value: delay, type: INT64}\n"
                 "      Late: {value: late, type: BOOL}\n"
                 "      Ratio: {value: ratio, type: FLOAT64}\n"
                 "      Note: {value: note, type: STRING}\n"
                 "      Info: {value: info, type: JSON}\n"
                 "      Day: {value: day, type: DATE}\n",
                 "", "    operation: insert\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto mapper = SpannerMutationMapper::make(*spec->transform.to_spanner);
  ASSERT_TRUE(mapper.ok()) << mapper.status();
  auto m = mapper->map(Flight());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->op(), spanner::Mutation::Op::kInsert);
  EXPECT_EQ(m->table(), "Flights");
  const auto& row = m->proto().insert().values(0);
  ASSERT_EQ(row.values_size(), 8);
  EXPECT_EQ(row.values(0).string_value(), "SFO#7");
  EXPECT_EQ(row.values(1).string_value(), "SFO");
  EXPECT_EQ(row.values(2).string_value(), "12") << "INT64 travels as a decimal string";
  EXPECT_TRUE(row.values(3).bool_value());
  EXPECT_EQ(row.values(4).number_value(), 0.25);
  EXPECT_TRUE(row.values(5).has_null_value()) << "a null field is NULL";
  EXPECT_EQ(nlohmann::json::parse(row.values(6).string_value()), (nlohmann::json{{"gate", "B2"}}));
  EXPECT_EQ(row.values(7).string_value(), "2001-01-02");
}

TEST(SpannerSpec, AValueItsTypeCannotHoldIsARecordErrorNamingTheColumn) {
  auto spec = Parse(File("      Id: origin\n      Delay: {value: origin, type: INT64}\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto mapper = SpannerMutationMapper::make(*spec->transform.to_spanner);
  ASSERT_TRUE(mapper.ok());
  auto m = mapper->map(Flight());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("column Delay (INT64)"));
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("'SFO' is not a 64-bit integer"));
  auto ratio = Parse(File("      Id: origin\n      Ratio: {value: ratio, type: FLOAT64}\n"));
  auto ratio_mapper = SpannerMutationMapper::make(*ratio->transform.to_spanner);
  for (const char* bad : {"0x1p3", " 1.5", "1.5 ", "1e400", "inf", ""}) {
    PipelineRecord r;
    r.fields = nlohmann::json{{"origin", "SFO"}, {"ratio", bad}};
    EXPECT_EQ(ratio_mapper->map(r).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  auto missing = Parse(File("      Id: gone\n"));
  auto mm = SpannerMutationMapper::make(*missing->transform.to_spanner);
  EXPECT_THAT(std::string(mm->map(Flight()).status().message()), HasSubstr("gone"));
}

// BYTES and TIMESTAMP columns read the record's text as the wire form (docs/cli.md,
// to_spanner): BYTES as base64 (decoded, so "aGVsbG8=" stores "hello"), TIMESTAMP as RFC 3339
// with any offset, sent as the same instant in UTC.
TEST(SpannerSpec, BytesAreBase64AndTimestampsTravelInUtc) {
  auto spec =
      Parse(File("      Id: origin\n"
                 "      Blob: {value: blob, type: BYTES}\n"
                 "      At: {value: at, type: TIMESTAMP}\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto mapper = SpannerMutationMapper::make(*spec->transform.to_spanner);
  ASSERT_TRUE(mapper.ok()) << mapper.status();
  PipelineRecord r;
  r.fields =
      nlohmann::json{{"origin", "SFO"}, {"blob", "aGVsbG8"}, {"at", "2001-01-02T03:04:05+01:00"}};
  auto m = mapper->map(r);
  ASSERT_TRUE(m.ok()) << m.status();
  const auto& row = m->proto().insert_or_update().values(0);
  EXPECT_EQ(row.values(1).string_value(), "aGVsbG8=") << "decoded, re-sent padded";
  EXPECT_EQ(row.values(2).string_value(), "2001-01-02T02:04:05Z");
  r.fields["blob"] = "not base64!";
  auto bad = mapper->map(r);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("column Blob (BYTES)"));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("not base64"));
}

// Under JSON, an object or array field is its JSON; a string field is JSON text, parsed and
// checked (a CSV column holding a document), never wrapped as a JSON string.
TEST(SpannerSpec, AStringUnderJsonIsADocumentNotAJsonString) {
  auto spec = Parse(File("      Id: origin\n      Doc: {value: doc, type: JSON}\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto mapper = SpannerMutationMapper::make(*spec->transform.to_spanner);
  ASSERT_TRUE(mapper.ok()) << mapper.status();
  PipelineRecord r;
  r.fields = nlohmann::json{{"origin", "SFO"}, {"doc", "{\"gate\": \"B2\"}"}};
  auto m = mapper->map(r);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(nlohmann::json::parse(m->proto().insert_or_update().values(0).values(1).string_value()),
            (nlohmann::json{{"gate", "B2"}}));
  r.fields["doc"] = "{not json";
  auto bad = mapper->map(r);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("column Doc (JSON)"));
}

// Spanner's column names are case-insensitive and 1 to 128 characters: a mapping that names a
// column twice, or an empty name, would have every record refused, so it is refused up front.
TEST(SpannerSpec, ColumnNamesAreCheckedAsSpannerComparesThem) {
  auto twice = Parse(File("      Id: origin\n      S: origin\n      s: origin\n"));
  EXPECT_THAT(std::string(twice.status().message()), HasSubstr("transform.to_spanner.columns.s"));
  EXPECT_THAT(std::string(twice.status().message()), HasSubstr("case-insensitive"));
  auto empty = Parse(File("      Id: origin\n      '': origin\n"));
  EXPECT_THAT(std::string(empty.status().message()), HasSubstr("1 to 128 characters"));
  auto rejections =
      Parse(File("      Id: origin\n", "  writer_options:\n    max_consecutive_rejections: 100\n"));
  ASSERT_TRUE(rejections.ok()) << rejections.status();
  EXPECT_EQ(std::get<SpannerSinkSpec>(rejections->sink).writer_options.max_consecutive_rejections,
            100);
}

TEST(SpannerSpec, MistakesAreRefusedAtTheirKey) {
  auto bad_type = Parse(File("      Id: {value: origin, type: INT32}\n"));
  EXPECT_THAT(std::string(bad_type.status().message()),
              HasSubstr("transform.to_spanner.columns.Id.type"));
  auto bad_db = Parse(
      File("      Id: origin\n")
          .replace(File("      Id: origin\n").find("database: flights"), 17, "database: 9lives"));
  EXPECT_THAT(std::string(bad_db.status().message()), HasSubstr("sink.database"));
  auto empty_project =
      Parse(File("      Id: origin\n")
                .replace(File("      Id: origin\n").find("project: p"), 10, "project: ''"));
  EXPECT_THAT(std::string(empty_project.status().message()),
              HasSubstr("sink.project: is empty; a value is required"));
  auto bad_op = Parse(File("      Id: origin\n", "", "    operation: upsert\n"));
  EXPECT_THAT(std::string(bad_op.status().message()), HasSubstr("to_spanner.operation"));
  auto no_columns = Parse(File(""));
  EXPECT_THAT(std::string(no_columns.status().message()), HasSubstr("to_spanner.columns"));
  auto cells = Parse(File("      Id: origin\n", "  writer_options:\n    max_batch_cells: 80001\n"));
  EXPECT_THAT(std::string(cells.status().message()),
              HasSubstr("sink.writer_options.max_batch_cells"));
  auto delay =
      Parse(File("      Id: origin\n", "  writer_options:\n    max_commit_delay: 501ms\n"));
  EXPECT_THAT(std::string(delay.status().message()),
              HasSubstr("sink.writer_options.max_commit_delay"));
  auto zero_delay =
      Parse(File("      Id: origin\n", "  writer_options:\n    max_commit_delay: 0ms\n"));
  ASSERT_TRUE(zero_delay.ok()) << zero_delay.status();
  EXPECT_EQ(std::get<SpannerSinkSpec>(zero_delay->sink).writer_options.max_commit_delay,
            std::chrono::milliseconds(0));
  auto no_mapping = Parse(R"(name: t
source: {type: file, path: /tmp/in.json}
sink: {type: spanner, project: p, instance: inst, database: flights}
)");
  EXPECT_THAT(std::string(no_mapping.status().message()), HasSubstr("transform.to_spanner"));
}

TEST(SpannerSpec, WriterOptionsPolicyAndLineageAreRead) {
  auto spec = Parse(File("      Id: origin\n",
                         "  constraint_violation_policy: ROUTE_TO_FAILURE_HANDLER\n"
                         "  writer_options:\n    max_batch_cells: 2000\n    rpc_priority: LOW\n"
                         "    batch_write_timeout: 5s\n    retry_max_attempts: 3\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& sink = std::get<SpannerSinkSpec>(spec->sink);
  EXPECT_TRUE(sink.route_constraint_violations);
  EXPECT_EQ(sink.writer_options.max_batch_cells, 2000);
  EXPECT_EQ(sink.writer_options.rpc_priority, spanner::RpcPriority::kLow);
  EXPECT_EQ(sink.writer_options.batch_write_timeout, std::chrono::seconds(5));
  EXPECT_EQ(sink.writer_options.retry_max_attempts, 3);
  auto lineage = PipelineLineage(*spec);
  ASSERT_EQ(lineage.size(), 2u);
  EXPECT_EQ(lineage[1].second.connector, "spanner");
  EXPECT_EQ(lineage[1].second.datasets[0].name_space, "spanner://p:inst");
  EXPECT_EQ(lineage[1].second.datasets[0].name, "flights.Flights");
  auto described = DescribePipeline(*spec);
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_THAT(*described, HasSubstr("projects/p/instances/inst/databases/flights"));
}

TEST(SpannerSpec, TheExamplePipelineParsesAndKeepsFlightsSharingARouteApart) {
  auto spec = LoadPipelineSpec(
      std::string(GCPSTREAM_SOURCE_DIR) + "/examples/pipelines/flights-to-spanner.yaml",
      [](const std::string&) { return std::nullopt; });
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto mapper = SpannerMutationMapper::make(*spec->transform.to_spanner);
  ASSERT_TRUE(mapper.ok()) << mapper.status();
  PipelineRecord a;
  a.fields = nlohmann::json{{"date", "2001/01/01 00:47"}, {"origin", "DTW"},
                            {"destination", "LAS"},       {"delay", 66},
                            {"distance", 1750},           {"seq", 1}};
  PipelineRecord b = a;
  b.fields["seq"] = 2;
  auto ma = mapper->map(a);
  auto mb = mapper->map(b);
  ASSERT_TRUE(ma.ok() && mb.ok()) << ma.status() << mb.status();
  EXPECT_NE(ma->proto().insert_or_update().values(0).values(0).string_value(),
            mb->proto().insert_or_update().values(0).values(0).string_value());
}

}  // namespace
}  // namespace gcpstream::pipeline
