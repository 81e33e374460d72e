// The spanner source of a pipeline file: what it accepts, the errors naming the key, the row as
// record fields (every type), the example pipeline, describe and lineage.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/pipeline/describe.h"
#include "gcpstream/pipeline/spanner_source_factory.h"
#include "gcpstream/pipeline/spec_parser.h"

namespace gcpstream::pipeline {
namespace {

using ::testing::HasSubstr;
namespace sp = google::spanner::v1;

// `source_extra` goes under source (indented by two).
std::string File(const std::string& source_extra) {
  return R"(name: t
source:
  type: spanner
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

TEST(SpannerSourceSpec, AQueryOrATableReadWithItsOptions) {
  auto query = Parse(
      File("  query: SELECT Id FROM Flights\n  timestamp_bound: exact_staleness\n"
           "  exact_staleness: 15s\n  max_partitions: 8\n  data_boost_enabled: true\n"
           "  rpc_priority: LOW\n  max_rows_per_fetch: 10\n  emulator_endpoint: 127.0.0.1:9010\n"));
  ASSERT_TRUE(query.ok()) << query.status();
  const auto& q = std::get<SpannerSourceSpec>(query->source);
  EXPECT_EQ(*q.query, "SELECT Id FROM Flights");
  EXPECT_EQ(q.options.timestamp_bound.mode(), spanner::TimestampBound::Mode::kExactStaleness);
  EXPECT_EQ(*q.options.max_partitions, 8);
  EXPECT_TRUE(q.options.data_boost_enabled);
  EXPECT_EQ(q.options.rpc_priority, sp::RequestOptions::PRIORITY_LOW);
  EXPECT_EQ(q.options.max_rows_per_fetch, 10);
  ASSERT_TRUE(MakePipelineSource(query->source).ok());

  auto table = Parse(
      File("  table: Flights\n  index: FlightsByOrigin\n  columns: [Id, Origin]\n"
           "  timestamp_bound: read_timestamp\n  read_timestamp: 2026-12-02T03:00:00+01:00\n"));
  ASSERT_TRUE(table.ok()) << table.status();
  const auto& t = std::get<SpannerSourceSpec>(table->source);
  EXPECT_EQ(*t.index, "FlightsByOrigin");
  EXPECT_THAT(t.columns, ::testing::ElementsAre("Id", "Origin"));
  EXPECT_EQ(t.options.timestamp_bound.to_string(), "read_timestamp(2026-12-02T02:00:00Z)");
  auto lineage = PipelineLineage(*table);
  EXPECT_EQ(lineage[0].second.connector, "spanner");
  EXPECT_TRUE(lineage[0].second.bounded);
  EXPECT_EQ(lineage[0].second.datasets[0].name, "flights.Flights");
  auto described = DescribePipeline(*table);
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_THAT(*described, HasSubstr("table Flights through index FlightsByOrigin (Id, Origin)"));
}

TEST(SpannerSourceSpec, MistakesAreRefusedAtTheirKey) {
  struct Case {
    std::string extra;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{
           {"  query: SELECT 1\n  table: T\n  columns: [A]\n", "never both"},
           {"", "one of query and table"},
           {"  query: SELECT 1\n  columns: [A]\n", "source.columns"},
           {"  table: T\n", "needs the list of columns"},
           {"  query: SELECT 1\n  read_timestamp: 2026-01-01T00:00:00Z\n", "source.read_timestamp"},
           {"  query: SELECT 1\n  timestamp_bound: read_timestamp\n  read_timestamp: yesterday\n",
            "not an RFC 3339"},
           {"  query: SELECT 1\n  timestamp_bound: max_staleness\n", "allowed values"},
           {"  query: SELECT 1\n  rpc_priority: URGENT\n", "source.rpc_priority"},
           {"  query: SELECT 1\n  max_partitions: 0\n", "source.max_partitions"},
           {"  query: SELECT 1\n  timestamp_bound: read_timestamp\n"
            "  read_timestamp: 2099-01-01T00:00:00Z\n",
            "in the future"},
       }) {
    auto spec = Parse(File(c.extra));
    ASSERT_FALSE(spec.ok()) << c.extra;
    EXPECT_THAT(spec.status().message(), HasSubstr(c.expected)) << c.extra;
  }
}

TEST(SpannerSourceSpec, EachIdIsCheckedAtItsOwnKey) {
  for (const char* key : {"project", "instance", "database"}) {
    std::string text = File("  query: SELECT 1\n");
    const std::string line = fmt::format("  {}: ", key);
    const auto at = text.find(line);
    const auto end = text.find('\n', at);
    text.replace(at, end - at, line + "\"Bad Id!\"");
    auto spec = Parse(text);
    ASSERT_FALSE(spec.ok()) << key;
    EXPECT_THAT(spec.status().message(), HasSubstr(fmt::format("source.{}:", key)));
  }
}

// One column of `type` holding `wire`.
spanner::Row OneColumn(sp::Type type, google::protobuf::Value wire, std::string name = "c") {
  auto columns = std::make_shared<sp::StructType>();
  auto* f = columns->add_fields();
  f->set_name(std::move(name));
  *f->mutable_type() = std::move(type);
  return spanner::Row(std::move(columns), {std::move(wire)});
}

nlohmann::json Field(spanner::Value v) {
  auto j = SpannerRowToJson(OneColumn(v.type(), v.proto()));
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? (*j)["c"] : nlohmann::json();
}

TEST(SpannerSourceSpec, EachColumnTypeBecomesTheJsonThatKeepsItsValue) {
  using spanner::Value;
  EXPECT_EQ(Field(Value::Bool(true)), nlohmann::json(true));
  EXPECT_EQ(Field(Value::Int64(9007199254740993)), nlohmann::json(9007199254740993))
      << "an INT64 beyond 2^53 stays exact";
  EXPECT_EQ(Field(Value::Float64(0.5)), nlohmann::json(0.5));
  EXPECT_EQ(Field(Value::Float64(std::numeric_limits<double>::quiet_NaN())), nlohmann::json("NaN"));
  EXPECT_EQ(Field(*Value::Numeric("12345678901234567890.123456789")),
            nlohmann::json("12345678901234567890.123456789"));
  EXPECT_EQ(Field(*Value::Json("{\"a\":[1,null]}")), nlohmann::json::parse("{\"a\":[1,null]}"));
  EXPECT_EQ(Field(Value::Bytes(std::string("\0\1", 2))), nlohmann::json("AAE="));
  EXPECT_EQ(Field(Value::Null(spanner::MakeType(sp::STRING))), nlohmann::json(nullptr));
  EXPECT_EQ(Field(*Value::Date(absl::CivilDay(2026, 12, 2))), nlohmann::json("2026-12-02"));
  EXPECT_EQ(Field(*Value::Array(spanner::MakeType(sp::INT64),
                                {Value::Int64(1), Value::Null(spanner::MakeType(sp::INT64))})),
            nlohmann::json::parse("[1,null]"));
  EXPECT_EQ(Field(*Value::Struct({{"x", Value::Int64(1)}, {"", Value::Bool(false)}})),
            nlohmann::json::parse("{\"x\":1,\"_1\":false}"));
  // A value that does not match its type is an error naming the column.
  google::protobuf::Value bad;
  bad.set_string_value("not a number");
  auto broken = SpannerRowToJson(OneColumn(spanner::MakeType(sp::INT64), bad, "Delay"));
  ASSERT_FALSE(broken.ok());
  EXPECT_THAT(broken.status().message(), HasSubstr("Delay"));
}

TEST(SpannerSourceSpec, TheExamplePipelineParses) {
  auto spec = LoadPipelineSpec(
      std::string(GCPSTREAM_SOURCE_DIR) + "/examples/pipelines/flights-spanner-to-pubsub.yaml",
      [](const std::string&) { return std::nullopt; });
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& s = std::get<SpannerSourceSpec>(spec->source);
  EXPECT_THAT(*s.query, HasSubstr("FROM Flights"));
  EXPECT_TRUE(MakePipelineSource(spec->source).ok());
}

}  // namespace
}  // namespace gcpstream::pipeline
