// The BigQuery fake's REST jobs, each behaviour after the public reference it follows:
// "jobs.insert" and "Running jobs programmatically" (a caller-chosen job id; re-using an id
// answers 409 duplicate and the first job stays, fetchable with jobs.get), "Job" status
// (RUNNING, then DONE with errorResult on failure), "JobConfigurationLoad" (sourceUris,
// sourceFormat AVRO, useAvroLogicalTypes, writeDisposition, createDisposition, at most 10,000
// URIs per job from "Quotas and limits": load jobs) and "Loading Avro data from Cloud Storage"
// (the Avro container read with logical types; a load is atomic: all rows or none).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/bigquery/admin/table_admin.h"
#include "gcpstream/bigquery/schema/writer_descriptor.h"
#include "gcpstream/bigquery/staging/avro_container.h"
#include "gcpstream/bigquery/staging/avro_row_encoder.h"
#include "gcpstream/connector/oauth2_credentials.h"
#include "gcpstream/gcs/storage_client.h"
#include "tests/support/bigquery_staging_fixture.h"

namespace gcpstream::bigquery {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class BigQueryFakeJobsTest : public testing::BigQueryStagingTest {
 protected:
  void SetUp() override {
    BigQueryStagingTest::SetUp();
    schema_.fields.resize(2);
    schema_.fields[0].name = "id";
    schema_.fields[0].type = FieldType::kInt64;
    schema_.fields[0].mode = FieldMode::kRequired;
    schema_.fields[1].name = "at";
    schema_.fields[1].type = FieldType::kTimestamp;
  }

  // Stages an Avro container of rows id = first .. first + n - 1 as gs://staging/NAME.
  std::string stage(const std::string& name, int first, int n) {
    auto type = WriterRowType::Create(schema_);
    auto encoder = staging::AvroRowEncoder::Create(schema_, (*type)->proto());
    EXPECT_TRUE(encoder.ok()) << encoder.status();
    staging::AvroContainerWriter writer((*encoder)->schema_json(), staging::AvroCodec::kZstandard);
    std::string file;
    writer.start(&file);
    for (int i = first; i < first + n; ++i) {
      auto row = (*type)->NewRow();
      const auto* d = row->GetDescriptor();
      row->GetReflection()->SetInt64(row.get(), d->FindFieldByName("id"), i);
      row->GetReflection()->SetInt64(row.get(), d->FindFieldByName("at"), 1000000LL * i);
      std::string datum;
      EXPECT_TRUE((*encoder)->encode(row->SerializeAsString(), &datum).ok());
      EXPECT_TRUE(writer.add(datum, &file).ok());
    }
    EXPECT_TRUE(writer.flush(&file).ok());
    EXPECT_TRUE(storage_->insert_object("staging", name, file).ok());
    return "gs://staging/" + name;
  }

  json load(std::vector<std::string> uris, const std::string& write = "WRITE_APPEND",
            const std::string& create = "CREATE_IF_NEEDED") {
    return {{"load",
             {{"sourceUris", uris},
              {"sourceFormat", "AVRO"},
              {"useAvroLogicalTypes", true},
              {"destinationTable", {{"projectId", "p"}, {"datasetId", "d"}, {"tableId", "t"}}},
              {"schema", {{"fields", TableSchemaToJson(schema_)}}},
              {"writeDisposition", write},
              {"createDisposition", create}}}};
  }

  std::size_t rows() {
    auto r = fake_->rows("projects/p/datasets/d/tables/t");
    return r.ok() ? r->size() : 0;
  }

  TableSchema schema_;
};

TEST_F(BigQueryFakeJobsTest, ACallerChosenIdIsKeptAndReusingItAnswers409WithTheFirstJobIntact) {
  const std::string a = stage("a.avro", 0, 3);
  auto first = admin_->insert_job("p", "gcpstream_load_x-c1", load({a}));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)["jobReference"]["jobId"], "gcpstream_load_x-c1");
  const std::string b = stage("b.avro", 10, 5);
  auto again = admin_->insert_job("p", "gcpstream_load_x-c1", load({b}));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();
  EXPECT_EQ(ErrorReasonOf(again.status()), "duplicate");
  const json done = await_job("gcpstream_load_x-c1");
  EXPECT_EQ(done["configuration"]["load"]["sourceUris"], json::array({a}))
      << "the 409 left the first job as it was";
  EXPECT_EQ(rows(), 3u);
  EXPECT_EQ(fake_->jobs().jobs_created(), 1);
  EXPECT_EQ(admin_->get_job("p", "no_such_job", "").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(BigQueryFakeJobsTest, ALoadLandsAllItsFilesWhenItTurnsDoneAndNotBefore) {
  fake_->jobs().set_options(/*polls_until_done=*/2, 0);
  const std::string a = stage("a.avro", 0, 4), b = stage("b.avro", 4, 6);
  ASSERT_TRUE(admin_->insert_job("p", "j1", load({a, b})).ok());
  auto running = admin_->get_job("p", "j1", "US");
  ASSERT_TRUE(running.ok()) << running.status();
  EXPECT_EQ((*running)["status"]["state"], "RUNNING");
  EXPECT_EQ(rows(), 0u) << "a running load shows no rows yet";
  const json done = await_job("j1");
  EXPECT_FALSE(done["status"].contains("errorResult")) << done.dump();
  EXPECT_EQ(done["statistics"]["load"]["outputRows"], "10");
  EXPECT_EQ(done["statistics"]["load"]["inputFiles"], "2");
  auto landed = fake_->rows("projects/p/datasets/d/tables/t");
  ASSERT_TRUE(landed.ok());
  ASSERT_EQ(landed->size(), 10u);
  EXPECT_EQ((*landed)[9]["id"], "9");
  EXPECT_EQ((*landed)[9]["at"], "9000000") << "timestamp-micros loaded as a TIMESTAMP";
}

TEST_F(BigQueryFakeJobsTest, AMissingOrUnreadableFileFailsTheWholeLoadAndNoRowLands) {
  const std::string a = stage("a.avro", 0, 3);
  ASSERT_TRUE(admin_->insert_job("p", "missing", load({a, "gs://staging/gone.avro"})).ok());
  json done = await_job("missing");
  EXPECT_EQ(done["status"]["errorResult"]["reason"], "notFound") << done.dump();
  ASSERT_TRUE(storage_->insert_object("staging", "junk.avro", "not avro").ok());
  ASSERT_TRUE(admin_->insert_job("p", "junk", load({a, "gs://staging/junk.avro"})).ok());
  done = await_job("junk");
  EXPECT_EQ(done["status"]["errorResult"]["reason"], "invalid") << done.dump();
  EXPECT_EQ(rows(), 0u) << "a failed load is all or nothing";
}

TEST_F(BigQueryFakeJobsTest, TruncateReplacesEmptyRefusesANonEmptyTableAndCreateNeverNeedsATable) {
  const std::string a = stage("a.avro", 0, 3), b = stage("b.avro", 100, 2);
  ASSERT_TRUE(admin_->insert_job("p", "never", load({a}, "WRITE_APPEND", "CREATE_NEVER")).ok());
  EXPECT_EQ(await_job("never")["status"]["errorResult"]["reason"], "notFound");
  ASSERT_TRUE(admin_->insert_job("p", "create", load({a})).ok());
  EXPECT_FALSE(await_job("create")["status"].contains("errorResult"));
  EXPECT_EQ(rows(), 3u) << "CREATE_IF_NEEDED made the table from the job's schema";
  ASSERT_TRUE(admin_->insert_job("p", "empty", load({b}, "WRITE_EMPTY")).ok());
  EXPECT_TRUE(await_job("empty")["status"].contains("errorResult"));
  EXPECT_EQ(rows(), 3u);
  ASSERT_TRUE(admin_->insert_job("p", "truncate", load({b}, "WRITE_TRUNCATE")).ok());
  EXPECT_FALSE(await_job("truncate")["status"].contains("errorResult"));
  auto landed = fake_->rows("projects/p/datasets/d/tables/t");
  ASSERT_TRUE(landed.ok());
  ASSERT_EQ(landed->size(), 2u);
  EXPECT_EQ((*landed)[0]["id"], "100");
}

TEST_F(BigQueryFakeJobsTest, AConfigurationTheServiceRefusesUpFrontAnswers400) {
  json csv = load({"gs://staging/a.csv"});
  csv["load"]["sourceFormat"] = "CSV";
  EXPECT_EQ(admin_->insert_job("p", "csv", csv).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(admin_->insert_job("p", "wild", load({"gs://staging/*.avro"})).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<std::string> many(10001, "gs://staging/a.avro");
  auto too_many = admin_->insert_job("p", "many", load(many));
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_many.status().message()), HasSubstr("10000"));
  EXPECT_EQ(admin_->insert_job("p", "bad id!", load({"gs://staging/a.avro"})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fake_->jobs().jobs_created(), 0);
}

TEST_F(BigQueryFakeJobsTest, ALostInsertResponseStillMadeTheJobSoTheRetryMeets409) {
  fake_->jobs().set_options(1, /*lose_insert_responses=*/1);
  const std::string a = stage("a.avro", 0, 3);
  auto lost = admin_->insert_job("p", "lost", load({a}));
  EXPECT_EQ(lost.status().code(), absl::StatusCode::kUnavailable) << lost.status();
  auto retry = admin_->insert_job("p", "lost", load({a}));
  EXPECT_EQ(retry.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_FALSE(await_job("lost")["status"].contains("errorResult"));
  EXPECT_EQ(rows(), 3u) << "one job, one landing";
}

TEST_F(BigQueryFakeJobsTest, ACopyJobAppendsItsSourcesRows) {
  const std::string a = stage("a.avro", 0, 3);
  ASSERT_TRUE(admin_->insert_job("p", "load", load({a})).ok());
  await_job("load");
  const json copy = {
      {"copy",
       {{"sourceTables", {{{"projectId", "p"}, {"datasetId", "d"}, {"tableId", "t"}}}},
        {"destinationTable", {{"projectId", "p"}, {"datasetId", "d"}, {"tableId", "t2"}}}}}};
  ASSERT_TRUE(admin_->insert_job("p", "copy", copy).ok());
  const json done = await_job("copy");
  EXPECT_FALSE(done["status"].contains("errorResult")) << done.dump();
  auto copied = fake_->rows("projects/p/datasets/d/tables/t2");
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(copied->size(), 3u);
}

}  // namespace
}  // namespace gcpstream::bigquery
