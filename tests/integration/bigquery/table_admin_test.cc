// The BigQuery v2 REST table client against the fake: tables.get / insert / patch and
// datasets.get, HTTP statuses mapped onto gRPC codes with the v2 error reason kept.
#include "gcpstream/bigquery/admin/table_admin.h"

#include <gtest/gtest.h>

#include "tests/fakes/bigquery/bigquery_fake.h"

namespace gcpstream::bigquery {
namespace {

TEST(TableAdminIT, CreatesReadsAndWidensATableAndMapsFailuresToCodes) {
  auto fake = testing::BigQueryFake::Start();
  ASSERT_TRUE(fake.ok()) << fake.status();
  ASSERT_TRUE((*fake)->add_dataset("p", "d").ok());
  TableAdmin admin((*fake)->rest_endpoint(), connector::MakeNoCredentials());
  const TableRef t{"p", "d", "flights"};
  EXPECT_EQ(t.resource_name(), "projects/p/datasets/d/tables/flights");

  EXPECT_TRUE(admin.get_dataset("p", "d").ok());
  EXPECT_EQ(admin.get_dataset("p", "nope").status().code(), absl::StatusCode::kNotFound);
  auto missing = admin.get_table(t);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ErrorReasonOf(missing.status()), "notFound");

  const nlohmann::json resource = {
      {"schema", {{"fields", {{{"name", "origin"}, {"type", "STRING"}, {"mode", "REQUIRED"}}}}}},
      {"clustering", {{"fields", {"origin"}}}}};
  auto created = admin.insert_table(t, resource);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["tableReference"]["tableId"], "flights");
  auto again = admin.insert_table(t, resource);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(ErrorReasonOf(again.status()), "duplicate");

  auto table = admin.get_table(t);
  ASSERT_TRUE(table.ok());
  const std::string etag = (*table)["etag"];
  auto fields = (*table)["schema"]["fields"];
  fields.push_back({{"name", "delay"}, {"type", "INTEGER"}});
  auto widened = admin.patch_table(t, {{"schema", {{"fields", fields}}}}, etag);
  ASSERT_TRUE(widened.ok()) << widened.status();
  EXPECT_EQ((*widened)["schema"]["fields"].size(), 2u);
  auto stale = admin.patch_table(t, {{"schema", {{"fields", fields}}}}, etag);
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kFailedPrecondition) << stale.status();
  auto narrowed = admin.patch_table(t, {{"schema", {{"fields", nlohmann::json::array()}}}}, "");
  EXPECT_EQ(narrowed.status().code(), absl::StatusCode::kInvalidArgument);

  TableAdmin nowhere("http://127.0.0.1:1", connector::MakeNoCredentials());
  EXPECT_EQ(nowhere.get_table(t).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace gcpstream::bigquery
