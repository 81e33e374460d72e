// The FILE_LOADS sink (BigQueryFileLoadsSink) end to end against the BigQuery fake: its
// builder's refusals, rows loaded once per checkpoint through its writer and committer, a
// restore re-committing checkpointed committables without loading twice
// (../shared/spec/bigquery.md, "File loads"; options from FileLoadsOptions).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "gcpstream/bigquery/sink/bigquery_file_loads_sink.h"
#include "gcpstream/runtime/metric_registry.h"
#include "tests/support/bigquery_staging_fixture.h"
#include "tests/support/fake_contexts.h"

namespace gcpstream::bigquery {
namespace {

using ::testing::HasSubstr;
const connector::BigQueryTableDestination kTable =
    connector::BigQueryTableDestination::of("p", "d", "numbers");

TableSchema Schema(const char* extra = "") {
  return *TableSchemaFromJson(
      nlohmann::json::parse(std::string(R"([{"name": "n", "type": "INT64", "mode": "REQUIRED"},
                      {"name": "code", "type": "STRING"})") +
                            extra + "]"));
}

class CommitterContext final : public CommitterInitContext {
 public:
  int subtask_index() const override { return 0; }
  int parallelism() const override { return 1; }
  MetricGroup& metric_group() override { return registry_.group({{"test", "committer"}}); }
  runtime::MetricRegistry registry_;
};

class FileLoadsSinkIT : public testing::BigQueryStagingTest {
 protected:
  BigQuerySink<std::int64_t>::Builder builder(TableSchema schema = Schema()) {
    auto serializer = BigQuerySerializationSchema<std::int64_t>::json(
        std::move(schema), [](const std::int64_t& n) {
          return absl::StatusOr<std::optional<nlohmann::json>>(
              nlohmann::json{{"n", n}, {"code", "c" + std::to_string(n % 7)}});
        });
    EXPECT_TRUE(serializer.ok()) << serializer.status();
    BigQueryWriterOptions options;
    options.recovery.initial_backoff = std::chrono::milliseconds(5);
    FileLoadsOptions loads;
    loads.staging_path = "gs://staging/jobs/numbers";
    loads.load_job_poll_initial_backoff = std::chrono::milliseconds(2);
    loads.load_job_poll_max_backoff = std::chrono::milliseconds(10);
    auto b = BigQuerySink<std::int64_t>::builder();
    b.destination(kTable)
        .serializer(*serializer)
        .write_method(WriteMethod::kFileLoads)
        .file_loads_options(loads)
        .writer_options(options)
        .emulator_endpoint("127.0.0.1:1")  // the Storage Write API is never called
        .emulator_rest_endpoint(fake_->rest_endpoint());
    return b;
  }

  std::map<std::int64_t, int> visible() {
    std::map<std::int64_t, int> out;
    auto rows = fake_->rows(kTable.resource_name());
    if (!rows.ok()) return out;
    for (const auto& r : *rows) ++out[std::stoll(r["n"].get<std::string>())];
    return out;
  }
  static std::map<std::int64_t, int> once(std::int64_t from, std::int64_t to) {
    std::map<std::int64_t, int> out;
    for (std::int64_t n = from; n < to; ++n) out[n] = 1;
    return out;
  }
  // Writes [from, to), flushes, and returns the checkpoint's committables as a checkpoint would
  // keep them (serialized and read back).
  static std::vector<StagedFiles> checkpoint(SinkWriter<std::int64_t>& w,
                                             const BigQueryFileLoadsSink<std::int64_t>& sink,
                                             std::int64_t from, std::int64_t to, std::int64_t id) {
    SinkWriterContext ctx;
    for (std::int64_t n = from; n < to; ++n) EXPECT_TRUE(w.write(n, ctx).ok()) << n;
    EXPECT_TRUE(w.flush(false).ok());
    auto* committing = dynamic_cast<CommittingSinkWriter<std::int64_t, StagedFiles>*>(&w);
    EXPECT_NE(committing, nullptr);
    auto committables = committing->prepare_commit_at(id);
    EXPECT_TRUE(committables.ok());
    std::vector<StagedFiles> kept;
    for (const auto& c : *committables) {
      auto bytes = sink.committable_serializer().serialize(c);
      EXPECT_TRUE(bytes.ok()) << bytes.status();
      auto back = sink.committable_serializer().deserialize(1, *bytes);
      EXPECT_TRUE(back.ok()) << back.status();
      kept.push_back(*back);
    }
    return kept;
  }
  static absl::Status commit(Committer<StagedFiles>& c, const std::vector<StagedFiles>& files) {
    std::vector<CommitRequest<StagedFiles>> requests;
    for (const auto& f : files) requests.emplace_back(f);
    GCP_RETURN_IF_ERROR(c.commit(requests));
    for (const auto& r : requests) GCP_RETURN_IF_ERROR(r.failure());
    return absl::OkStatus();
  }
};

TEST_F(FileLoadsSinkIT, TheBuilderRefusesWhatFileLoadsCannotDo) {
  auto no_options = builder();
  no_options.file_loads_options(FileLoadsOptions{});
  EXPECT_THAT(std::string(no_options.build_file_loads().status().message()),
              HasSubstr("staging_path"));
  auto bad_path = builder();
  FileLoadsOptions path;
  path.staging_path = "s3://elsewhere";
  bad_path.file_loads_options(path);
  EXPECT_EQ(bad_path.build_file_loads().status().code(), absl::StatusCode::kInvalidArgument);
  path.staging_path = "gs://staging/x*";  // a load would read * as a wildcard
  bad_path.file_loads_options(path);
  EXPECT_THAT(std::string(bad_path.build_file_loads().status().message()), HasSubstr("wildcard"));
  EXPECT_THAT(std::string(builder().build().status().message()), HasSubstr("build_file_loads"));
  auto other_method = builder();
  other_method.write_method(WriteMethod::kStorageApiExactlyOnce);
  EXPECT_THAT(std::string(other_method.build().status().message()), HasSubstr("FILE_LOADS only"));
  EXPECT_EQ(other_method.build_file_loads().status().code(), absl::StatusCode::kInvalidArgument);
  auto widening = builder();
  SchemaUpdateOptions updates;
  updates.allow_new_fields = true;
  widening.schema_update_options(updates);
  EXPECT_THAT(std::string(widening.build_file_loads().status().message()),
              HasSubstr("schema_update_options"));
  auto interval = builder(Schema(R"(, {"name": "span", "type": "INTERVAL"})"));
  EXPECT_THAT(std::string(interval.build_file_loads().status().message()), HasSubstr("span"));
  EXPECT_TRUE(builder().build_file_loads().ok());
  // Each subtask loads its own files: a replacing disposition at parallelism 2 is refused when
  // the writer starts.
  auto truncate = builder();
  FileLoadsOptions replace;
  replace.staging_path = "gs://staging/x";
  replace.write_disposition = WriteDisposition::kWriteTruncate;
  truncate.file_loads_options(replace);
  auto sink = truncate.build_file_loads();
  ASSERT_TRUE(sink.ok()) << sink.status();
  testing::TestMailbox mailbox;
  testing::FakeWriterInitContext two(mailbox, 0, 2);
  auto refused = (*sink)->create_writer(two);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("parallelism 2"));
}

TEST_F(FileLoadsSinkIT, EachCheckpointLoadsItsRowsOnceAndARestoreLoadsNothingTwice) {
  auto sink = builder().build_file_loads();
  ASSERT_TRUE(sink.ok()) << sink.status();
  testing::TestMailbox mailbox;
  testing::FakeWriterInitContext context(mailbox);
  CommitterContext committer_context;
  auto w = (*sink)->create_writer(context);
  ASSERT_TRUE(w.ok()) << w.status();
  auto committer = (*sink)->create_committer(committer_context);
  ASSERT_TRUE(committer.ok()) << committer.status();

  const auto first = checkpoint(**w, **sink, 0, 1000, 1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].rows, 1000);
  EXPECT_EQ(first[0].checkpoint_id, 1);
  EXPECT_THAT(first[0].uris[0], HasSubstr("gs://staging/jobs/numbers/"));
  EXPECT_TRUE(visible().empty()) << "nothing is visible before the checkpoint completed";
  ASSERT_TRUE(commit(**committer, first).ok());
  EXPECT_EQ(visible(), once(0, 1000));

  const auto second = checkpoint(**w, **sink, 1000, 1500, 2);
  ASSERT_TRUE(commit(**committer, second).ok());
  EXPECT_EQ(visible(), once(0, 1500));

  // A restore from checkpoint 2 re-commits what that checkpoint held, with a new committer.
  CommitterContext restored_context;
  auto restored = (*sink)->create_committer(restored_context);
  ASSERT_TRUE(restored.ok());
  ASSERT_TRUE(commit(**restored, second).ok());
  ASSERT_TRUE(commit(**restored, first).ok());
  EXPECT_EQ(visible(), once(0, 1500)) << "re-attached by job id, nothing loaded twice";
  EXPECT_EQ(fake_->jobs().jobs_created(), 2);
  ASSERT_TRUE((*w)->close().ok());
}

}  // namespace
}  // namespace gcpstream::bigquery
