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

  std::unique_ptr<BigQueryFake> fake_;
  std::shared_ptr<bigquery::TableAdmin> admin_;
  std::shared_ptr<gcs::StorageClient> storage_;
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_BIGQUERY_STAGING_FIXTURE_H_
