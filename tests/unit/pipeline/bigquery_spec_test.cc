// The bigquery sink of a pipeline file: what it accepts, the errors naming file, line and key,
// and what describe says.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/pipeline/describe.h"
#include "gcpstream/pipeline/spec_parser.h"

namespace gcpstream::pipeline {
namespace {

using ::testing::HasSubstr;

std::string File(const std::string& sink_extra, const std::string& transform = "") {
  return R"(name: t
source:
  type: file
  path: /tmp/in.json
)" + transform +
         R"(sink:
  type: bigquery
  project: p
  dataset: flights
  table: delays
)" + sink_extra;
}

constexpr char kSchema[] = R"(  schema:
    - {name: origin, type: STRING, mode: REQUIRED}
    - {name: delay, type: INTEGER}
    - name: route
      type: RECORD
      fields:
        - {name: to, type: STRING}
)";

absl::StatusOr<PipelineSpec> Parse(const std::string& text) {
  return ParsePipelineSpec(text, "p.yaml",
                           [](const std::string&) -> std::optional<std::string> { return ""; });
}

TEST(BigQuerySpec, ParsesTheTableSchemaAndOptions) {
  auto spec = Parse(File(std::string(kSchema) + R"(  create_disposition: CREATE_NEVER
  table_create_options:
    time_partitioning: {type: DAY}
    clustering_fields: [origin]
  writer_options:
    max_append_request_bytes: 4096
    retry_max_attempts: 3
    recovery_max_attempts: 4
)"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& sink = std::get<BigQuerySinkSpec>(spec->sink);
  EXPECT_EQ(sink.table, "delays");
  ASSERT_EQ(sink.schema.fields.size(), 3u);
  EXPECT_EQ(sink.schema.fields[0].mode, bigquery::FieldMode::kRequired);
  EXPECT_EQ(sink.schema.fields[1].type, bigquery::FieldType::kInt64);
  EXPECT_EQ(sink.schema.fields[2].fields[0].name, "to");
  EXPECT_FALSE(sink.create_if_needed);
  EXPECT_EQ(sink.table_create_options.time_partitioning["type"], "DAY");
  EXPECT_EQ(sink.writer_options.max_append_request_bytes, 4096);
  EXPECT_EQ(sink.writer_options.retry_max_attempts, 3);
  EXPECT_EQ(sink.writer_options.recovery.max_attempts, 4);
}

TEST(BigQuerySpec, MistakesAreRefusedNamingTheKey) {
  auto missing = Parse(File(""));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("sink.schema"));
  auto bad_type = Parse(File("  schema:\n    - {name: a, type: TEXT}\n"));
  ASSERT_FALSE(bad_type.ok());
  EXPECT_THAT(bad_type.status().message(), HasSubstr("type"));
  auto twice =
      Parse(File("  schema:\n    - {name: a, type: STRING}\n    - {name: A, type: INT64}\n"));
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("twice"));
  auto clusters = Parse(File(std::string(kSchema) +
                             "  table_create_options:\n    clustering_fields: [a, b, c, d, e]\n"));
  ASSERT_FALSE(clusters.ok());
  EXPECT_THAT(clusters.status().message(), HasSubstr("at most 4"));
  auto dataset = Parse(R"(name: t
source: {type: file, path: /tmp/in.json}
sink:
  type: bigquery
  project: p
  dataset: "bad-dataset"
  table: t
)" + std::string(kSchema));
  ASSERT_FALSE(dataset.ok());
  EXPECT_THAT(dataset.status().message(), HasSubstr("sink.dataset"));
  auto unclustered = Parse(
      File(std::string(kSchema) + "  table_create_options:\n    clustering_fields: [nope]\n"));
  ASSERT_FALSE(unclustered.ok());
  EXPECT_THAT(unclustered.status().message(), HasSubstr("sink.table_create_options"));
  auto ftp = Parse(File(std::string(kSchema) + "  emulator_rest_endpoint: ftp://127.0.0.1:9051\n"));
  ASSERT_FALSE(ftp.ok());
  EXPECT_THAT(ftp.status().message(), HasSubstr("sink.emulator_rest_endpoint"));
  auto mapping = Parse(File(kSchema, "transform:\n  to_pubsub: {}\n"));
  ASSERT_FALSE(mapping.ok());
  EXPECT_THAT(mapping.status().message(), HasSubstr("no mapping"));
}

TEST(BigQuerySpec, ExactlyOnceIsChosenByWriteMethodAndNeedsCheckpointing) {
  const std::string exactly_once =
      std::string(kSchema) + "  write_method: STORAGE_API_EXACTLY_ONCE\n";
  auto spec = Parse(File(exactly_once) + "checkpointing:\n  interval: 1s\n  dir: /tmp/c\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(std::get<BigQuerySinkSpec>(spec->sink).write_method,
            bigquery::WriteMethod::kStorageApiExactlyOnce);
  auto defaulted = Parse(File(kSchema));
  ASSERT_TRUE(defaulted.ok()) << defaulted.status();
  EXPECT_EQ(std::get<BigQuerySinkSpec>(defaulted->sink).write_method,
            bigquery::WriteMethod::kStorageApiAtLeastOnce);
  auto no_dir = Parse(File(exactly_once) + "checkpointing:\n  interval: 1s\n");
  ASSERT_FALSE(no_dir.ok()) << "without a directory a crashed job cannot resume";
  EXPECT_THAT(std::string(no_dir.status().message()), HasSubstr("checkpointing.dir"));
  auto unchecked = Parse(File(exactly_once));
  ASSERT_FALSE(unchecked.ok());
  EXPECT_THAT(std::string(unchecked.status().message()), HasSubstr("sink.write_method"));
  EXPECT_THAT(std::string(unchecked.status().message()), HasSubstr("checkpointing.interval"));
  auto widening =
      Parse(File(std::string(kSchema) + "  schema_update_options: {allow_new_fields: true}\n"));
  ASSERT_TRUE(widening.ok()) << widening.status();
  EXPECT_TRUE(std::get<BigQuerySinkSpec>(widening->sink).schema_update_options.allow_new_fields);
  EXPECT_FALSE(
      std::get<BigQuerySinkSpec>(widening->sink).schema_update_options.allow_field_relaxation);
  EXPECT_FALSE(
      Parse(File(std::string(kSchema) + "  schema_update_options: {add_fields: true}\n")).ok())
      << "an unknown key is refused";
  auto unknown = Parse(File(std::string(kSchema) + "  write_method: STREAMING_INSERTS\n"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("FILE_LOADS"));
}

TEST(BigQuerySpec, FileLoadsNeedAStagingPathAndACheckpointIntervalTheLoadQuotaAllows) {
  const std::string loads = std::string(kSchema) + R"(  write_method: FILE_LOADS
  file_loads:
    staging_path: gs://staging/flights
    min_checkpoint_interval: 10s
    max_staging_file_bytes: 2097152
)";
  const std::string checkpointing = "checkpointing: {interval: 30s, dir: /tmp/cp}\n";
  auto spec = Parse(File(loads) + checkpointing);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& sink = std::get<BigQuerySinkSpec>(spec->sink);
  EXPECT_EQ(sink.write_method, bigquery::WriteMethod::kFileLoads);
  ASSERT_TRUE(sink.file_loads.has_value());
  EXPECT_EQ(sink.file_loads->staging_path, "gs://staging/flights");
  EXPECT_EQ(sink.file_loads->max_staging_file_bytes, 2097152);
  EXPECT_EQ(sink.file_loads->min_checkpoint_interval, std::chrono::seconds(10));
  auto text = DescribePipeline(*spec);
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("loaded by WRITE_APPEND load jobs"));

  auto no_path = Parse(File(std::string(kSchema) + "  write_method: FILE_LOADS\n") + checkpointing);
  ASSERT_FALSE(no_path.ok());
  EXPECT_THAT(std::string(no_path.status().message()), HasSubstr("staging_path"));
  auto too_often = Parse(File(loads) + "checkpointing: {interval: 5s, dir: /tmp/cp}\n");
  ASSERT_FALSE(too_often.ok());
  EXPECT_THAT(std::string(too_often.status().message()), HasSubstr("min_checkpoint_interval"));
  auto truncate_streaming =
      Parse(File(loads + "    write_disposition: WRITE_TRUNCATE\n") + checkpointing);
  ASSERT_FALSE(truncate_streaming.ok());
  EXPECT_THAT(std::string(truncate_streaming.status().message()), HasSubstr("WRITE_APPEND"));
  auto truncate_batch = Parse(File(loads + "    write_disposition: WRITE_TRUNCATE\n"));
  ASSERT_TRUE(truncate_batch.ok()) << "a bounded file source without checkpointing loads once at "
                                      "its end: "
                                   << truncate_batch.status();
  auto parallel_truncate =
      Parse("parallelism: 2\n" + File(loads + "    write_disposition: WRITE_TRUNCATE\n"));
  ASSERT_FALSE(parallel_truncate.ok());
  EXPECT_THAT(std::string(parallel_truncate.status().message()), HasSubstr("parallelism"));
  auto parallel_often = Parse("parallelism: 4\n" + File(loads) + checkpointing);
  ASSERT_FALSE(parallel_often.ok()) << "30 s x 4 subtasks is more loads than 10 s allows";
  EXPECT_THAT(std::string(parallel_often.status().message()), HasSubstr("parallelism (4)"));
  auto bad_path = Parse(File(std::string(kSchema) +
                             "  write_method: FILE_LOADS\n  file_loads: {staging_path: /tmp/x}\n"));
  ASSERT_FALSE(bad_path.ok());
  EXPECT_THAT(std::string(bad_path.status().message()), HasSubstr("gs://"));
  auto wrong_method =
      Parse(File(std::string(kSchema) + "  file_loads: {staging_path: gs://staging/x}\n"));
  ASSERT_FALSE(wrong_method.ok());
  EXPECT_THAT(std::string(wrong_method.status().message()), HasSubstr("FILE_LOADS"));
}

TEST(BigQuerySpec, DescribeNamesTheTableAndItsColumns) {
  auto spec = Parse(File(kSchema));
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto text = DescribePipeline(*spec);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("bigquery projects/p/datasets/flights/tables/delays"));
  EXPECT_THAT(*text, HasSubstr("origin STRING REQUIRED"));
  EXPECT_THAT(*text, HasSubstr("table created if missing"));
  EXPECT_THAT(*text, HasSubstr("default stream, at least once"));
  auto exactly = Parse(File(std::string(kSchema) + "  write_method: STORAGE_API_EXACTLY_ONCE\n" +
                            "checkpointing: {interval: 1s, dir: /tmp/ck}\n"));
  ASSERT_TRUE(exactly.ok()) << exactly.status();
  auto described = DescribePipeline(*exactly);
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_THAT(*described, HasSubstr("BUFFERED streams flushed when a checkpoint completes"));
  EXPECT_THAT(*described, ::testing::Not(HasSubstr("at least once")));
}

}  // namespace
}  // namespace gcpstream::pipeline
