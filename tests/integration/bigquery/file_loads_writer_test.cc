// FILE_LOADS writing end to end below the sink facade: rows through the shared writer core and
// StagingFileClient become Avro files in the fake's Cloud Storage (resumable uploads in 256 KiB
// chunks, files rolled at their size cap), a checkpoint turns the finished files into
// committables, and LoadJobCommitter loads them exactly once (../shared/spec/bigquery.md,
// "File loads").
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "gcpstream/bigquery/schema/writer_descriptor.h"
#include "gcpstream/bigquery/sink/bigquery_sink_adapter.h"
#include "gcpstream/bigquery/sink/load_job_committer.h"
#include "gcpstream/connector/oauth2_credentials.h"
#include "tests/support/bigquery_staging_fixture.h"
#include "tests/support/fake_contexts.h"

namespace gcpstream::bigquery {
namespace {

using ::testing::HasSubstr;
const TableRef kTable = TableRef::of("p", "d", "t");
const TableRef kOther = TableRef::of("p", "d", "u");

class FileLoadsWriterIT : public testing::BigQueryStagingTest {
 protected:
  void SetUp() override {
    BigQueryStagingTest::SetUp();
    schema_ = *TableSchemaFromJson(nlohmann::json::parse(R"([
      {"name": "id", "type": "INT64", "mode": "REQUIRED"},
      {"name": "note", "type": "STRING"}])"));
    row_type_ = *WriterRowType::Create(schema_);
    ledger_ = std::make_shared<StagedFilesLedger>();
  }

  std::unique_ptr<BigQueryWriterCore> core(
      std::shared_ptr<connector::FailureHandler> handler = connector::FailureHandler::fail_job()) {
    BigQueryWriterConfig config;
    config.schema = schema_;
    config.writer_descriptor = row_type_->proto();
    config.failure_handler = std::move(handler);
    config.admin = admin_;
    BigQueryWriterConfig::Staging staging;
    staging.storage = storage_;
    staging.ledger = ledger_;
    staging.options.bucket = "staging";
    staging.options.prefix = "run/";
    staging.options.run = "r1";
    staging.options.chunk_bytes = 256 * 1024;
    staging.options.max_file_bytes = 700 * 1024;
    staging.options.block_bytes = 64 * 1024;
    staging.options.codec = staging::AvroCodec::kNull;  // sizes as written, so files roll
    staging.options.retry.initial_backoff = std::chrono::milliseconds(1);
    config.staging = staging;
    auto c = MakeBigQueryWriterCore(std::move(config), context_);
    EXPECT_TRUE(c->open().ok());
    return c;
  }

  BigQueryRow row(std::int64_t id, bool with_id = true) {
    auto m = row_type_->NewRow();
    const auto* d = m->GetDescriptor();
    if (with_id) m->GetReflection()->SetInt64(m.get(), d->FindFieldByName("id"), id);
    m->GetReflection()->SetString(m.get(), d->FindFieldByName("note"), std::string(200, 'x'));
    return BigQueryRow{m->SerializeAsString()};
  }

  absl::Status load(const std::vector<StagedFiles>& committables) {
    LoadJobCommitterConfig c;
    c.admin = admin_;
    c.storage = storage_;
    c.schema = schema_;
    c.poll_initial_backoff = std::chrono::milliseconds(1);
    LoadJobCommitter committer(std::move(c), registry_.group({{"c", "1"}}));
    std::vector<CommitRequest<StagedFiles>> requests;
    for (const auto& f : committables) requests.emplace_back(f);
    GCP_RETURN_IF_ERROR(committer.commit(requests));
    for (const auto& r : requests) GCP_RETURN_IF_ERROR(r.failure());
    return absl::OkStatus();
  }

  std::multiset<std::string> ids(const TableRef& t) {
    std::multiset<std::string> out;
    auto rows = fake_->rows(t.resource_name());
    if (rows.ok()) {
      for (const auto& r : *rows) out.insert(r["id"].get<std::string>());
    }
    return out;
  }

  TableSchema schema_;
  std::unique_ptr<WriterRowType> row_type_;
  std::shared_ptr<StagedFilesLedger> ledger_;
  testing::TestMailbox mailbox_;
  testing::FakeWriterInitContext context_{mailbox_};
  runtime::MetricRegistry registry_;
};

TEST_F(FileLoadsWriterIT, RowsStageInRolledFilesAndLoadExactlyOnceAtTheirCheckpoint) {
  auto writer = core();
  for (int i = 0; i < 5000; ++i) {
    ASSERT_TRUE(writer->write(kTable, row(i)).ok()) << i;
  }
  ASSERT_TRUE(writer->flush(false).ok());
  std::vector<StagedFiles> committables = ledger_->prepare_commit_at(1);
  ASSERT_EQ(committables.size(), 1u);
  const StagedFiles& files = committables[0];
  EXPECT_EQ(files.table, kTable.resource_name());
  EXPECT_EQ(files.rows, 5000);
  EXPECT_EQ(files.checkpoint_id, 1);
  EXPECT_GT(files.uris.size(), 1u) << "about 1 MB of rows in files of at most 700 KiB";
  for (const auto& uri : files.uris) {
    EXPECT_THAT(uri, HasSubstr("gs://staging/run/r1/t/0-0-"));
    EXPECT_TRUE(fake_->gcs().read("staging", uri.substr(std::string("gs://staging/").size())).ok())
        << uri;
  }
  EXPECT_TRUE(ledger_->prepare_commit_at(2).empty()) << "each file is committed once";
  EXPECT_TRUE(ids(kTable).empty()) << "nothing is visible before the load";
  ASSERT_TRUE(load(committables).ok());
  const auto loaded = ids(kTable);
  EXPECT_EQ(loaded.size(), 5000u);
  EXPECT_EQ(std::set<std::string>(loaded.begin(), loaded.end()).size(), 5000u) << "no duplicate";
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(FileLoadsWriterIT, EachTableStagesItsOwnFilesAndAnEmptyCheckpointCommitsNothing) {
  auto writer = core();
  ASSERT_TRUE(writer->flush(false).ok());
  EXPECT_TRUE(ledger_->prepare_commit_at(1).empty());
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(writer->write(i % 2 == 0 ? kTable : kOther, row(i)).ok());
  }
  ASSERT_TRUE(writer->flush(true).ok());
  auto committables = ledger_->prepare_commit_at(std::numeric_limits<std::int64_t>::max());
  ASSERT_EQ(committables.size(), 2u);
  EXPECT_EQ(committables[0].checkpoint_id, -1) << "the end of input";
  ASSERT_TRUE(load(committables).ok());
  EXPECT_EQ(ids(kTable), (std::multiset<std::string>{"0", "2", "4", "6", "8"}));
  EXPECT_EQ(ids(kOther), (std::multiset<std::string>{"1", "3", "5", "7", "9"}));
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(FileLoadsWriterIT, ARowALoadWouldRefuseGoesToTheFailureHandlerAndTheOthersStage) {
  std::vector<std::string> routed;
  auto writer = core(connector::FailureHandler::custom([&](const connector::FailedElement& e) {
    routed.push_back(e.message());
    return absl::OkStatus();
  }));
  ASSERT_TRUE(writer->write(kTable, row(1)).ok());
  ASSERT_TRUE(writer->write(kTable, row(2, /*with_id=*/false)).ok());
  ASSERT_TRUE(writer->write(kTable, row(3)).ok());
  ASSERT_TRUE(writer->flush(false).ok());
  ASSERT_EQ(routed.size(), 1u);
  EXPECT_THAT(routed[0], HasSubstr("column id"));
  ASSERT_TRUE(load(ledger_->prepare_commit_at(1)).ok());
  EXPECT_EQ(ids(kTable), (std::multiset<std::string>{"1", "3"}));
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(FileLoadsWriterIT, ARowOverTheAppendRowsLimitIsStagedInChunksAndLoads) {
  // 11 MB: more than an AppendRows request takes (10 MB), less than an Avro block (16 MB).
  auto writer = core();
  auto m = row_type_->NewRow();
  const auto* d = m->GetDescriptor();
  m->GetReflection()->SetInt64(m.get(), d->FindFieldByName("id"), 7);
  m->GetReflection()->SetString(m.get(), d->FindFieldByName("note"), std::string(11'000'000, 'n'));
  ASSERT_TRUE(writer->write(kTable, BigQueryRow{m->SerializeAsString()}).ok());
  ASSERT_TRUE(writer->write(kTable, row(8)).ok());
  ASSERT_TRUE(writer->flush(false).ok());
  auto committables = ledger_->prepare_commit_at(1);
  ASSERT_EQ(committables.size(), 1u);
  EXPECT_EQ(committables[0].rows, 2);
  ASSERT_TRUE(load(committables).ok());
  EXPECT_EQ(ids(kTable), (std::multiset<std::string>{"7", "8"}));
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(FileLoadsWriterIT, UnderTheDefaultHandlerARefusedRowFailsTheJobNamingTheColumn) {
  auto writer = core();
  ASSERT_TRUE(writer->write(kTable, row(2, /*with_id=*/false)).ok());
  const absl::Status flushed = writer->flush(false);
  EXPECT_FALSE(flushed.ok());
  EXPECT_THAT(std::string(flushed.message()), HasSubstr("REQUIRED"));
}

TEST_F(FileLoadsWriterIT, AMissingBucketFailsTheJobInsteadOfDroppingRows) {
  auto writer = core();
  // Rows for a table whose files go nowhere: the bucket is removed behind the writer's back.
  fake_->gcs().remove_bucket("staging");
  ASSERT_TRUE(writer->write(kTable, row(1)).ok());
  const absl::Status flushed = writer->flush(false);
  EXPECT_FALSE(flushed.ok()) << "an upload that cannot land must fail the job";
  EXPECT_THAT(std::string(flushed.message()), HasSubstr("gs://staging/"));
  EXPECT_TRUE(ledger_->prepare_commit_at(1).empty()) << "no committable names a file that failed";
}

}  // namespace
}  // namespace gcpstream::bigquery
