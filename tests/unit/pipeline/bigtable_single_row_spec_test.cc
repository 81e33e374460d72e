// The single-row Bigtable sink modes of a pipeline file (mode CONDITIONAL and
// READ_MODIFY_WRITE): what they accept, the errors naming the key, the requests a record maps
// to, and describe.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/pipeline/bigtable_row_mapper.h"
#include "gcpstream/pipeline/describe.h"
#include "gcpstream/pipeline/pipeline_job.h"
#include "gcpstream/pipeline/spec_parser.h"

namespace gcpstream::pipeline {
namespace {

using ::testing::HasSubstr;

std::string File(const std::string& mapping, const std::string& sink_extra) {
  return R"(name: t
source:
  type: file
  path: /dev/null
transform:
  to_bigtable:
    row_key: "{user}"
    family: p
)" + mapping +
         R"(sink:
  type: bigtable
  project: p
  instance: i
  table: users
)" + sink_extra;
}

absl::StatusOr<PipelineSpec> Parse(const std::string& text) {
  return ParsePipelineSpec(text, "p.yaml",
                           [](const std::string&) -> std::optional<std::string> { return ""; });
}

// Parses and assembles (the sink's checks run at assembly); the first error.
absl::Status Assemble(const std::string& text) {
  auto spec = Parse(text);
  if (!spec.ok()) return spec.status();
  return AssembleJob(*spec, {}).status();
}

TEST(BigtableSingleRowSpec, ConditionalModeMapsThePredicateAndBothBranches) {
  const std::string text = File(
      "    when: {qualifier: name, equals: \"{expected}\"}\n    columns: {name: next}\n"
      "    otherwise: {conflict: next}\n",
      "  mode: CONDITIONAL\n  empty_branch_policy: FAIL\n"
      "  request_options: {max_in_flight_requests: 8, request_timeout: 3s}\n");
  auto spec = Parse(text);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& b = std::get<BigtableSinkSpec>(spec->sink);
  EXPECT_EQ(b.mode, BigtableSinkSpec::Mode::kConditional);
  EXPECT_TRUE(b.fail_on_empty_branch);
  EXPECT_EQ(b.request_options.max_in_flight_requests, 8);
  EXPECT_EQ(b.request_options.request_timeout, std::chrono::seconds(3));
  EXPECT_TRUE(AssembleJob(*spec, {}).ok());
  auto described = DescribePipeline(*spec);
  ASSERT_TRUE(described.ok());
  EXPECT_THAT(*described, HasSubstr("when the newest p:name equals {expected}, otherwise "
                                    "p:conflict={next} (one CheckAndMutateRow per record)"));

  auto mapper = BigtableRowMapper::make(*spec->transform.to_bigtable);
  ASSERT_TRUE(mapper.ok());
  PipelineRecord r;
  r.fields = {{"user", "u1"}, {"expected", "Ada"}, {"next", "Ada L."}};
  auto request = mapper->map_conditional(r);
  ASSERT_TRUE(request.ok()) << request.status();
  auto proto = request->to_proto("projects/p/instances/i/tables/users", "");
  EXPECT_EQ(proto.row_key(), "u1");
  EXPECT_EQ(proto.true_mutations(0).set_cell().column_qualifier(), "name");
  EXPECT_EQ(proto.true_mutations(0).set_cell().value(), "Ada L.");
  EXPECT_EQ(proto.false_mutations(0).set_cell().column_qualifier(), "conflict");
  EXPECT_TRUE(proto.has_predicate_filter());
}

TEST(BigtableSingleRowSpec, ReadModifyWriteModeMapsAppendsAndIncrements) {
  const std::string text =
      File("    increment: {visits: 1, spent: amount}\n    append: {log: note}\n",
           "  mode: READ_MODIFY_WRITE\n");
  auto spec = Parse(text);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(AssembleJob(*spec, {}).ok());
  auto mapper = BigtableRowMapper::make(*spec->transform.to_bigtable);
  ASSERT_TRUE(mapper.ok());
  PipelineRecord r;
  r.fields = {{"user", "u7"}, {"amount", -250}, {"note", "paid;"}};
  auto request = mapper->map_read_modify_write(r);
  ASSERT_TRUE(request.ok()) << request.status();
  auto proto = request->to_proto("projects/p/instances/i/tables/users", "");
  ASSERT_EQ(proto.rules_size(), 3);
  EXPECT_EQ(proto.rules(0).append_value(), "paid;");
  EXPECT_EQ(proto.rules(1).column_qualifier(), "visits");
  EXPECT_EQ(proto.rules(1).increment_amount(), 1);
  EXPECT_EQ(proto.rules(2).increment_amount(), -250);
  r.fields["amount"] = "lots";
  auto bad = mapper->map_read_modify_write(r);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("to_bigtable.increment.spent: 'lots' is not"));
}

TEST(BigtableSingleRowSpec, MistakesNameTheirKey) {
  struct Case {
    std::string mapping;
    std::string sink;
    std::string expect;
  };
  for (const auto& c : std::vector<Case>{
           {"    columns: {name: n}\n", "  mode: CONDITIONAL\n",
            "needs transform.to_bigtable.when"},
           {"    columns: {name: n}\n", "  mode: READ_MODIFY_WRITE\n", "to_bigtable.columns"},
           {"    increment: {v: 1}\n", "", "to_bigtable.increment"},
           {"    columns: {name: n}\n    when: row_exists\n", "", "to_bigtable.when"},
           {"    increment: {v: 1}\n",
            "  mode: READ_MODIFY_WRITE\n  create_disposition: "
            "CREATE_IF_NEEDED\n",
            "create_disposition"},
           {"    increment: {v: 1}\n",
            "  mode: READ_MODIFY_WRITE\n  writer_options: {max_in_flight_entries: 3}\n",
            "writer_options"},
           {"    increment: {v: 1}\n", "  mode: READ_MODIFY_WRITE\n  empty_branch_policy: FAIL\n",
            "empty_branch_policy"},
           {"    columns: {name: n}\n", "  request_options: {max_in_flight_requests: 3}\n",
            "request_options"},
           {"    columns: {a: b}\n    when: sometimes\n", "  mode: CONDITIONAL\n", "when"},
           {"    columns: {a: b}\n    when: {equals: x}\n", "  mode: CONDITIONAL\n", "qualifier"},
           {"    increment: {v: 1}\n",
            "  mode: READ_MODIFY_WRITE\n  delivery_guarantee: "
            "EXACTLY_ONCE\n",
            "delivery_guarantee"},
           {"    increment: {v: 1}\n", "  mode: SOMETIMES\n", "mode"},
       }) {
    absl::Status status = Assemble(File(c.mapping, c.sink));
    ASSERT_FALSE(status.ok()) << c.mapping << c.sink;
    EXPECT_THAT(status.message(), HasSubstr(c.expect)) << c.mapping << c.sink;
  }
}

}  // namespace
}  // namespace gcpstream::pipeline
