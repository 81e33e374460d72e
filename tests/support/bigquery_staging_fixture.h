#ifndef GCPSTREAM_TESTS_SUPPORT_BIGQUERY_STAGING_FIXTURE_H_
#define GCPSTREAM_TESTS_SUPPORT_BIGQUERY_STAGING_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>

#include "gcpstream/bigquery/admin/table_admin.h"
#include "gcpstream/connector/oauth2_credentials.h"
#include "gcpstream/gcs/storage_client.h"
#include "tests/fakes/bigquery/bigquery_fake.h"

namespace gcpstream::testing {

// A started BigQuery fake with dataset p:d and Cloud Storage bucket "staging", and the REST
// clients FILE_LOADS tests talk to it with (no credentials).
class BigQueryStagingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fake = BigQueryFake::Start();
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = std::move(*fake);
    fake_->add_bucket("staging");
    ASSERT_TRUE(fake_->add_dataset("p", "d").ok());
    admin_ = std::make_shared<bigquery::TableAdmin>(fake_->rest_endpoint(),
                                                    connector::MakeNoCredentials());
    storage_ = std::make_shared<gcs::StorageClient>(fake_->rest_endpoint(),
                                                    connector::MakeNoCredentials());
  }

  // Polls jobs.get for job `id` of project p until it is DONE (at most 20 polls; the fake's jobs
  // finish after pollsUntilDone gets), failing the test with the last state otherwise.
  nlohmann::json await_job(const std::string& id) {
    nlohmann::json job;
    for (int i = 0; i < 20; ++i) {
      auto got = admin_->get_job("p", id, "");
      EXPECT_TRUE(got.ok()) << got.status();
      if (!got.ok()) return nlohmann::json();
      job = *got;
      if (job["status"]["state"] == "DONE") return job;
    }
    ADD_FAILURE() << "job " << id << " not DONE after 20 polls: " << job.dump();
    return job;
  }

  std::unique_ptr<BigQueryFake> fake_;
  std::shared_ptr<bigquery::TableAdmin> admin_;
  std::shared_ptr<gcs::StorageClient> storage_;
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_BIGQUERY_STAGING_FIXTURE_H_
