// The FILE_LOADS committer against the BigQuery fake's jobs and Cloud Storage: one load per
// checkpoint and table with a deterministic job id, a re-commit (restore, lost answer, kill
// after jobs.insert) re-attaching to the job an earlier attempt made instead of loading twice,
// a job id naming another load refused, a failed load failing the commit with its files kept
// (../shared/spec/bigquery.md, "File loads": exactly-once).
#include "gcpstream/bigquery/sink/load_job_committer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/bigquery/schema/writer_descriptor.h"
#include "gcpstream/bigquery/staging/avro_container.h"
#include "gcpstream/bigquery/staging/avro_row_encoder.h"
#include "gcpstream/connector/oauth2_credentials.h"
#include "gcpstream/runtime/metric_registry.h"
#include "tests/support/bigquery_staging_fixture.h"

namespace gcpstream::bigquery {
namespace {

using ::testing::HasSubstr;
constexpr char kTable[] = "projects/p/datasets/d/tables/t";

class LoadJobCommitterIT : public testing::BigQueryStagingTest {
 protected:
  void SetUp() override {
    BigQueryStagingTest::SetUp();
    schema_.fields.resize(1);
    schema_.fields[0].name = "id";
    schema_.fields[0].type = FieldType::kInt64;
    fake_->jobs().set_options(/*polls_until_done=*/1, 0);
  }

  LoadJobCommitterConfig config() {
    LoadJobCommitterConfig c;
    c.admin = admin_;
    c.storage = storage_;
    c.schema = schema_;
    c.poll_initial_backoff = std::chrono::milliseconds(1);
    c.poll_max_backoff = std::chrono::milliseconds(5);
    c.recovery.initial_backoff = std::chrono::milliseconds(1);
    c.recovery.max_backoff = std::chrono::milliseconds(5);
    return c;
  }
  std::unique_ptr<LoadJobCommitter> committer(LoadJobCommitterConfig c) {
    return std::make_unique<LoadJobCommitter>(std::move(c), registry_.group({{"n", "1"}}));
  }
  std::int64_t metric(const char* name) {
    return registry_.group({{"n", "1"}}).counter(name).get();
  }

  // Stages rows [first, first + n) as gs://staging/NAME; the committable of that one file.
  StagedFiles stage(const std::string& name, int first, int n, std::int64_t checkpoint) {
    auto type = WriterRowType::Create(schema_);
    auto encoder = staging::AvroRowEncoder::Create(schema_, (*type)->proto());
    staging::AvroContainerWriter writer((*encoder)->schema_json(), staging::AvroCodec::kDeflate);
    std::string file;
    writer.start(&file);
    for (int i = first; i < first + n; ++i) {
      auto row = (*type)->NewRow();
      row->GetReflection()->SetInt64(row.get(), row->GetDescriptor()->field(0), i);
      std::string datum;
      EXPECT_TRUE((*encoder)->encode(row->SerializeAsString(), &datum).ok());
      EXPECT_TRUE(writer.add(datum, &file).ok());
    }
    EXPECT_TRUE(writer.flush(&file).ok());
    EXPECT_TRUE(storage_->insert_object("staging", name, file).ok());
    StagedFiles c;
    c.table = kTable;
    c.uris = {"gs://staging/" + name};
    c.rows = n;
    c.bytes = static_cast<std::int64_t>(file.size());
    c.checkpoint_id = checkpoint;
    return c;
  }

  static std::vector<CommitRequest<StagedFiles>> Requests(std::vector<StagedFiles> committables) {
    std::vector<CommitRequest<StagedFiles>> out;
    for (auto& c : committables) out.emplace_back(std::move(c));
    return out;
  }
  // Commits and returns the first failure signalled (OK when none).
  absl::Status commit(LoadJobCommitter& c, std::vector<StagedFiles> committables) {
    auto requests = Requests(std::move(committables));
    EXPECT_TRUE(c.commit(requests).ok());
    for (const auto& r : requests) {
      if (!r.failure().ok()) return r.failure();
    }
    return absl::OkStatus();
  }
  std::size_t rows() {
    auto r = fake_->rows(kTable);
    return r.ok() ? r->size() : 0;
  }

  TableSchema schema_;
  runtime::MetricRegistry registry_;
};

TEST_F(LoadJobCommitterIT, EachWritersFilesOfACheckpointLoadInAJobOfTheirOwnAndAreThenDeleted) {
  auto c = committer(config());
  ASSERT_TRUE(commit(*c, {stage("s0-a.avro", 0, 5, 1), stage("s1-a.avro", 5, 7, 1)}).ok());
  EXPECT_EQ(rows(), 12u);
  EXPECT_EQ(fake_->jobs().jobs_created(), 2) << "one load per committable";
  EXPECT_EQ(metric("loadJobsSubmitted"), 2);
  EXPECT_EQ(metric("tablesCreated"), 1) << "the missing table was created before the load";
  EXPECT_EQ(fake_->gcs().object_count(), 0) << "staged files are deleted after the load";
}

TEST_F(LoadJobCommitterIT, TwoCheckpointsNeverShareAJobIdAndLoadInOrder) {
  auto c = committer(config());
  ASSERT_TRUE(commit(*c, {stage("c2.avro", 100, 2, 2), stage("c1.avro", 0, 3, 1)}).ok());
  EXPECT_EQ(fake_->jobs().jobs_created(), 2);
  auto landed = fake_->rows(kTable);
  ASSERT_TRUE(landed.ok());
  ASSERT_EQ(landed->size(), 5u);
  EXPECT_EQ((*landed)[0]["id"], "0") << "checkpoint 1 loads before checkpoint 2";
  EXPECT_EQ((*landed)[4]["id"], "101");
}

TEST_F(LoadJobCommitterIT, ARestoredCommitterReattachesToTheJobTheKilledOneSubmitted) {
  // The killed attempt got as far as jobs.insert: the job exists, nobody saw it finish.
  const StagedFiles files = stage("a.avro", 0, 4, 7);
  {
    auto killed = committer(config());
    auto plan = PlanLoads({files});
    ASSERT_TRUE(plan.ok());
    ASSERT_TRUE(admin_->get_table(TableRef::of("p", "d", "t")).status().code() ==
                absl::StatusCode::kNotFound);
    ASSERT_TRUE(
        admin_->insert_table(TableRef::of("p", "d", "t"), TableCreateOptions().resource(schema_))
            .ok());
    ASSERT_TRUE(
        admin_->insert_job("p", (*plan)[0].job_id, killed->load_configuration((*plan)[0], schema_))
            .ok());
  }
  auto restored = committer(config());
  ASSERT_TRUE(commit(*restored, {files}).ok());
  EXPECT_EQ(rows(), 4u) << "loaded once";
  EXPECT_EQ(fake_->jobs().jobs_created(), 1) << "the same id was re-sent, no second job";
  EXPECT_EQ(metric("loadJobsAttached"), 1);
  // And committing the same committables yet again (another restore) changes nothing.
  ASSERT_TRUE(commit(*committer(config()), {files}).ok());
  EXPECT_EQ(rows(), 4u);
}

TEST_F(LoadJobCommitterIT, ALostInsertAnswerIsRetriedWithTheSameIdAndCountedOnce) {
  fake_->jobs().set_options(1, /*lose_insert_responses=*/1);
  auto c = committer(config());
  ASSERT_TRUE(commit(*c, {stage("a.avro", 0, 3, 1)}).ok());
  EXPECT_EQ(rows(), 3u);
  EXPECT_EQ(fake_->jobs().jobs_created(), 1);
  EXPECT_EQ(metric("loadJobsAttached"), 1);
}

TEST_F(LoadJobCommitterIT, AJobIdNamingAnotherLoadIsACollisionNotASuccess) {
  const StagedFiles ours = stage("ours.avro", 0, 3, 1);
  const StagedFiles other = stage("other.avro", 50, 2, 1);
  auto plan = PlanLoads({ours});
  ASSERT_TRUE(plan.ok());
  auto c = committer(config());
  PlannedLoad impostor = (*plan)[0];
  impostor.uris = other.uris;
  ASSERT_TRUE(
      admin_->insert_table(TableRef::of("p", "d", "t"), TableCreateOptions().resource(schema_))
          .ok());
  ASSERT_TRUE(
      admin_->insert_job("p", (*plan)[0].job_id, c->load_configuration(impostor, schema_)).ok());
  const absl::Status st = commit(*c, {ours});
  EXPECT_EQ(st.code(), absl::StatusCode::kInternal) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("collision"));
  EXPECT_TRUE(fake_->gcs().read("staging", "ours.avro").ok()) << "our files are kept";
}

TEST_F(LoadJobCommitterIT, AFailedLoadFailsItsCheckpointAndEveryLaterOneAndKeepsTheFiles) {
  StagedFiles broken = stage("a.avro", 0, 3, 1);
  broken.uris.push_back("gs://staging/vanished.avro");
  const StagedFiles later = stage("b.avro", 10, 2, 2);
  auto c = committer(config());
  auto requests = Requests({broken, later});
  ASSERT_TRUE(c->commit(requests).ok());
  EXPECT_EQ(requests[0].outcome(), CommitRequest<StagedFiles>::Outcome::kFailedKnown);
  EXPECT_THAT(std::string(requests[0].failure().message()), HasSubstr("all or nothing"));
  EXPECT_FALSE(requests[1].failure().ok()) << "checkpoint 2 never loads before checkpoint 1";
  EXPECT_EQ(rows(), 0u);
  EXPECT_EQ(fake_->jobs().jobs_created(), 1);
  EXPECT_TRUE(fake_->gcs().read("staging", "a.avro").ok());
  EXPECT_TRUE(fake_->gcs().read("staging", "b.avro").ok());
}

TEST_F(LoadJobCommitterIT, CreateNeverFailsForAMissingTableAndTruncateReplacesTheRows) {
  LoadJobCommitterConfig never = config();
  never.create_disposition = CreateDisposition::kCreateNever;
  const absl::Status st = commit(*committer(never), {stage("a.avro", 0, 3, 1)});
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("CREATE_NEVER"));
  ASSERT_TRUE(commit(*committer(config()), {stage("b.avro", 0, 3, 2)}).ok());
  LoadJobCommitterConfig truncate = config();
  truncate.write_disposition = "WRITE_TRUNCATE";
  ASSERT_TRUE(commit(*committer(truncate), {stage("c.avro", 40, 2, -1)}).ok());
  auto landed = fake_->rows(kTable);
  ASSERT_TRUE(landed.ok());
  ASSERT_EQ(landed->size(), 2u);
  EXPECT_EQ((*landed)[0]["id"], "40");
}

}  // namespace
}  // namespace gcpstream::bigquery
