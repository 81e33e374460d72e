// The single-row sink modes of a pipeline file (mode READ_MODIFY_WRITE and CONDITIONAL), run in
// process from YAML against the Bigtable emulator. Semantics followed: Bigtable's
// ReadModifyWriteRow (8-byte big-endian increments, appends) and CheckAndMutateRow references.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gcpstream/pipeline/pipeline_job.h"
#include "gcpstream/pipeline/spec_parser.h"
#include "tests/support/bigtable_emulator.h"
#include "tests/support/emulators.h"

namespace gcpstream::pipeline {
namespace {

namespace fs = std::filesystem;

constexpr char kProject[] = "single-row-yaml";
constexpr char kInstance[] = "inst";

class SingleRowPipelineIT : public ::testing::Test {
 protected:
  void SetUp() override {
    endpoint_ = testing::EmulatorEndpoint(testing::Emulator::kBigtable);
    ASSERT_FALSE(endpoint_.empty());
    client_ = std::make_unique<testing::BigtableEmulatorClient>(endpoint_);
    table_ = testing::UniqueId("yaml");
    google::bigtable::admin::v2::ColumnFamily family;
    family.mutable_gc_rule()->set_max_num_versions(1);
    ASSERT_TRUE(client_->create_table(name(), {{"p", family}}).ok());
    input_ = fs::temp_directory_path() / (table_ + ".json");
  }
  void TearDown() override { fs::remove(input_); }
  std::string name() const { return testing::BigtableTableName(kProject, kInstance, table_); }

  absl::Status Run(const std::string& records, const std::string& mapping,
                   const std::string& sink) {
    std::ofstream(input_) << records;
    const std::string text = "name: t\nsource:\n  type: file\n  path: " + input_.string() +
                             "\n  format: json_array\ntransform:\n  to_bigtable:\n"
                             "    row_key: \"{user}\"\n    family: p\n" +
                             mapping + "sink:\n  type: bigtable\n  project: " + kProject +
                             "\n  instance: " + kInstance + "\n  table: " + table_ +
                             "\n  emulator_endpoint: " + endpoint_ + "\n" + sink;
    auto spec = ParsePipelineSpec(
        text, "p.yaml",
        [](const std::string&) -> std::optional<std::string> { return std::nullopt; });
    if (!spec.ok()) return spec.status();
    auto env = AssembleJob(*spec, {});
    if (!env.ok()) return env.status();
    return (*env)->execute("single-row-yaml").status;
  }
  // The newest value of p:<qualifier> in each row.
  std::map<std::string, std::string> Column(const std::string& qualifier) {
    std::map<std::string, std::string> out;
    auto rows = client_->read_rows(name());
    EXPECT_TRUE(rows.ok()) << rows.status();
    if (!rows.ok()) return out;
    for (const auto& [row, cells] : *rows) {
      std::int64_t newest = -1;
      for (const auto& c : cells) {
        if (c.qualifier == qualifier && c.timestamp_micros > newest) {
          newest = c.timestamp_micros;
          out[row] = c.value;
        }
      }
    }
    return out;
  }

  std::string endpoint_;
  std::unique_ptr<testing::BigtableEmulatorClient> client_;
  std::string table_;
  fs::path input_;
};

std::int64_t Counter(const std::string& bytes) {
  std::int64_t v = 0;
  for (unsigned char b : bytes) v = (v << 8) | b;
  return v;
}

TEST_F(SingleRowPipelineIT, ReadModifyWriteIncrementsAndAppendsPerRecord) {
  absl::Status run =
      Run(R"([{"user":"a","amount":5,"note":"x;"},{"user":"a","amount":-2,"note":"y;"},)"
          R"({"user":"b","amount":7,"note":"z;"}])",
          "    increment: {visits: 1, spent: amount}\n    append: {log: note}\n",
          // One request in flight keeps the order of a row's appends (requests in flight may
          // apply in any order).
          "  mode: READ_MODIFY_WRITE\n  request_options: {max_in_flight_requests: 1}\n");
  ASSERT_TRUE(run.ok()) << run;
  auto visits = Column("visits");
  auto spent = Column("spent");
  EXPECT_EQ(Counter(visits["a"]), 2);
  EXPECT_EQ(Counter(spent["a"]), 3);
  EXPECT_EQ(Counter(spent["b"]), 7);
  EXPECT_EQ(Column("log")["a"], "x;y;");
}

TEST_F(SingleRowPipelineIT, ConditionalWritesTheBranchThePredicateSelects) {
  ASSERT_TRUE(Run(R"([{"user":"a","name":"Ada"}])", "    columns: {name: name}\n",
                  "  create_disposition: CREATE_NEVER\n")
                  .ok());
  absl::Status run = Run(
      R"([{"user":"a","expected":"Ada","next":"Ada L."},{"user":"b","expected":"Bob","next":"B"}])",
      "    when: {qualifier: name, equals: \"{expected}\"}\n    columns: {name: next}\n"
      "    otherwise: {conflict: next}\n",
      "  mode: CONDITIONAL\n");
  ASSERT_TRUE(run.ok()) << run;
  EXPECT_EQ(Column("name")["a"], "Ada L.") << "a matched: the true branch";
  EXPECT_EQ(Column("conflict")["b"], "B") << "b had no name: the false branch";
  EXPECT_EQ(Column("name").count("b"), 0u);
}

}  // namespace
}  // namespace gcpstream::pipeline
