// The exactly-once (staged) Bigtable sink and AddToCell columns in a pipeline file: what they
// accept, the errors naming the key, the mapped entry, describe, and the delay-counters example.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/pipeline/bigtable_row_mapper.h"
#include "gcpstream/pipeline/describe.h"
#include "gcpstream/pipeline/pipeline_job.h"
#include "gcpstream/pipeline/spec_parser.h"

namespace gcpstream::pipeline {
namespace {

using ::testing::HasSubstr;

std::string File(const std::string& sink_extra, const std::string& mapping = "") {
  return R"(name: t
source:
  type: file
  path: /dev/null
transform:
  to_bigtable:
    row_key: "{origin}"
    family: counters
)" + (mapping.empty() ? "    add_to_cell:\n      delayed: 1\n      minutes: delay\n" : mapping) +
         R"(checkpointing:
  interval: 1s
  dir: /tmp/gcpstream-staged-spec-test
sink:
  type: bigtable
  project: p
  instance: i
  table: delays
)" + sink_extra;
}

absl::StatusOr<PipelineSpec> Parse(const std::string& text) {
  return ParsePipelineSpec(text, "p.yaml",
                           [](const std::string&) -> std::optional<std::string> { return ""; });
}

TEST(BigtableStagedSpec, ExactlyOnceReadsItsStagedOptions) {
  auto spec =
      Parse(File("  app_profile_id: tx\n  delivery_guarantee: EXACTLY_ONCE\n  staged_options:\n"
                 "    marker_family: m\n    max_in_flight_requests: 7\n    request_timeout: 5s\n"
                 "    max_entries_per_interval: 10\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& b = std::get<BigtableSinkSpec>(spec->sink);
  EXPECT_TRUE(b.exactly_once);
  EXPECT_EQ(b.staged_options.marker_family, "m");
  EXPECT_EQ(b.staged_options.request_options.max_in_flight_requests, 7);
  EXPECT_EQ(b.staged_options.request_options.request_timeout, std::chrono::seconds(5));
  EXPECT_EQ(b.staged_options.max_entries_per_interval, 10);
  EXPECT_EQ(b.staged_options.max_bytes_per_interval, 64 << 20);
  auto described = DescribePipeline(*spec);
  ASSERT_TRUE(described.ok());
  EXPECT_THAT(*described, HasSubstr("counters:delayed+=1"));
  EXPECT_THAT(*described, HasSubstr("exactly once (staged until each checkpoint completes, "
                                    "markers in family m, app profile tx)"));
}

TEST(BigtableStagedSpec, MistakesNameTheirKey) {
  struct Case {
    std::string extra;
    std::string expect;
  };
  for (const auto& c : std::vector<Case>{
           {"  delivery_guarantee: EXACTLY_ONCE\n  staged_options: {marker_family: m}\n",
            "app_profile_id"},
           {"  app_profile_id: tx\n  delivery_guarantee: EXACTLY_ONCE\n", "marker_family"},
           {"  app_profile_id: tx\n  delivery_guarantee: EXACTLY_ONCE\n"
            "  staged_options: {marker_family: m}\n  create_disposition: CREATE_IF_NEEDED\n",
            "create_disposition"},
           {"  app_profile_id: tx\n  delivery_guarantee: EXACTLY_ONCE\n"
            "  staged_options: {marker_family: m}\n  writer_options: {max_in_flight_entries: 5}\n",
            "writer_options"},
           {"  staged_options: {marker_family: m}\n", "staged_options"},
           {"  delivery_guarantee: ONCE\n", "delivery_guarantee"},
           {"  app_profile_id: tx\n  delivery_guarantee: EXACTLY_ONCE\n"
            "  staged_options: {marker_family: m, max_in_flight_requests: 0}\n",
            "max_in_flight_requests"},
       }) {
    auto spec = Parse(File(c.extra));
    ASSERT_FALSE(spec.ok()) << c.extra;
    EXPECT_THAT(spec.status().message(), HasSubstr(c.expect)) << c.extra;
  }
}

TEST(BigtableStagedSpec, AddToCellColumnsBecomeInt64Adds) {
  BigtableMappingSpec m;
  m.row_key = "{origin}";
  m.family = "counters";
  m.add_to_cell = {{"delayed", "1"}, {"minutes", "{delay}"}};
  auto mapper = BigtableRowMapper::make(m);
  ASSERT_TRUE(mapper.ok()) << mapper.status();
  PipelineRecord r;
  r.fields = {{"origin", "SFO"}, {"delay", 42}};
  auto entry = mapper->map(r);
  ASSERT_TRUE(entry.ok()) << entry.status();
  const auto& proto = entry->proto();
  EXPECT_EQ(proto.row_key(), "SFO");
  ASSERT_EQ(proto.mutations_size(), 2);
  EXPECT_EQ(proto.mutations(0).add_to_cell().column_qualifier().raw_value(), "delayed");
  EXPECT_EQ(proto.mutations(0).add_to_cell().input().int_value(), 1);
  EXPECT_EQ(proto.mutations(1).add_to_cell().input().int_value(), 42);
  EXPECT_EQ(proto.mutations(1).add_to_cell().timestamp().raw_timestamp_micros(), 0);
  r.fields["delay"] = "late";
  auto bad = mapper->map(r);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("add_to_cell.minutes: 'late' is not"));
  r.fields["delay"] = "99999999999999999999";
  EXPECT_FALSE(mapper->map(r).ok()) << "out of the int64 range";
  for (const char* lenient : {" 12", "+5", "12 ", "-", ""}) {
    r.fields["delay"] = lenient;
    EXPECT_FALSE(mapper->map(r).ok()) << "'" << lenient << "' is not digits";
  }
  r.fields["delay"] = "-7";
  ASSERT_TRUE(mapper->map(r).ok());
  BigtableMappingSpec constant = m;
  constant.add_to_cell = {{"x", "9223372036854775808"}};
  auto refused = BigtableRowMapper::make(constant);
  ASSERT_FALSE(refused.ok()) << "a constant out of range is refused before any record";
  EXPECT_THAT(refused.status().message(), HasSubstr("add_to_cell.x"));
}

TEST(BigtableStagedSpec, TheDelayCountersExampleParsesAndBuilds) {
  auto spec = LoadPipelineSpec(
      std::string(GCPSTREAM_SOURCE_DIR) + "/examples/pipelines/flights-delay-counters.yaml",
      [](const std::string&) { return std::nullopt; });
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& b = std::get<BigtableSinkSpec>(spec->sink);
  EXPECT_TRUE(b.exactly_once);
  EXPECT_EQ(b.staged_options.marker_family, "flink_commit");
  EXPECT_EQ(spec->transform.to_bigtable->add_to_cell.size(), 2u);
}

TEST(BigtableStagedSpec, ExactlyOnceRefusesARunThatCannotBeRestored) {
  std::string text = File(
      "  app_profile_id: tx\n  delivery_guarantee: EXACTLY_ONCE\n"
      "  staged_options: {marker_family: m}\n");
  const std::string dir = "  dir: /tmp/gcpstream-staged-spec-test\n";
  text.erase(text.find(dir), dir.size());
  auto spec = Parse(text);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto job = AssembleJob(*spec, {});
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(job.status().message(), HasSubstr("needs exactly-once checkpoints written to a"));
}

TEST(BigtableStagedSpec, ExactlyOnceRefusesADroppingFailureHandler) {
  auto spec = Parse(File("  app_profile_id: tx\n  delivery_guarantee: EXACTLY_ONCE\n"
                         "  staged_options: {marker_family: m}\n") +
                    "failure_handler: log_and_drop\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto job = AssembleJob(*spec, {});
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(job.status().message(), HasSubstr("failure_handler: fail only"));
}

}  // namespace
}  // namespace gcpstream::pipeline
