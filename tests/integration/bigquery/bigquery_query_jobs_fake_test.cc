// The BigQuery fake's query jobs, each behaviour after the public reference it follows:
// "jobs.insert" and "JobConfigurationQuery" (useLegacySql defaults to true in the jobs API;
// destinationTable, writeDisposition defaulting to WRITE_EMPTY, createDisposition), "Writing
// query results" (a query without a destination table writes to a temporary table in an
// anonymous dataset, kept about 24 hours, whose name the finished job reports in
// configuration.query.destinationTable), "Job" status (DONE with errorResult reason
// invalidQuery or notFound when the query fails) and "Introduction to views" (a query over a
// logical view runs the view's query), and "jobs.get" (the location must be given for a job
// outside the US and EU multi-regions; a job runs where the data it reads is).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "tests/support/bigquery_staging_fixture.h"

namespace gcpstream::bigquery {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class BigQueryQueryJobsFakeTest : public testing::BigQueryStagingTest {
 protected:
  void SetUp() override {
    BigQueryStagingTest::SetUp();
    json table = {{"tableReference", {{"tableId", "flights"}}},
                  {"schema",
                   {{"fields",
                     {{{"name", "id"}, {"type", "INT64"}, {"mode", "REQUIRED"}},
                      {{"name", "origin"}, {"type", "STRING"}},
                      {{"name", "delay"}, {"type", "FLOAT64"}}}}}}};
    ASSERT_TRUE(fake_->add_table("p", "d", table).ok());
    std::vector<json> rows;
    for (int i = 0; i < 30; ++i) {
      rows.push_back(
          {{"id", std::to_string(i)}, {"origin", i % 3 == 0 ? "SFO" : "JFK"}, {"delay", i}});
    }
    ASSERT_TRUE(fake_->insert_rows("projects/p/datasets/d/tables/flights", rows).ok());
  }

  static json Query(const std::string& sql, bool legacy_flag = true) {
    json q = {{"query", sql}};
    if (legacy_flag) q["useLegacySql"] = false;
    return {{"query", q}};
  }

  // Inserts the job and waits until it is DONE.
  json run(const std::string& id, const json& config) {
    auto inserted = admin_->insert_job("p", id, config);
    EXPECT_TRUE(inserted.ok()) << inserted.status();
    return await_job(id);
  }

  std::vector<json> rows_of(const json& reference) {
    auto rows =
        fake_->rows("projects/" + reference.value("projectId", "") + "/datasets/" +
                    reference.value("datasetId", "") + "/tables/" + reference.value("tableId", ""));
    EXPECT_TRUE(rows.ok()) << rows.status() << " for " << reference.dump();
    return rows.ok() ? *rows : std::vector<json>();
  }
};

TEST_F(BigQueryQueryJobsFakeTest, AResultWithoutADestinationLandsInAnAnonymousTableTheJobNames) {
  fake_->jobs().set_options(/*polls_until_done=*/2, 0);
  const json done =
      run("q1", Query("SELECT id, origin FROM `p.d.flights` WHERE origin = 'SFO' AND id < 20"));
  ASSERT_FALSE(done["status"].contains("errorResult")) << done.dump();
  const json reference = done["configuration"]["query"]["destinationTable"];
  EXPECT_EQ(reference["projectId"], "p");
  EXPECT_TRUE(absl::StartsWith(reference.value("datasetId", ""), "_")) << reference.dump();
  const std::vector<json> rows = rows_of(reference);
  ASSERT_EQ(rows.size(), 7u);  // 0, 3, ..., 18
  for (const json& row : rows) {
    EXPECT_EQ(row["origin"], "SFO");
    EXPECT_FALSE(row.contains("delay")) << "a column the query did not select";
  }
  auto table = fake_->table("p", reference["datasetId"], reference["tableId"]);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ((*table)["schema"]["fields"].size(), 2u);
  EXPECT_TRUE(table->contains("expirationTime")) << "an anonymous result expires (about 24 h)";
  EXPECT_EQ(done["statistics"]["query"]["statementType"], "SELECT");
}

TEST_F(BigQueryQueryJobsFakeTest, JobsInsertDefaultsToLegacySqlWhichTheFakeFailsSayingSo) {
  const json done = run("legacy", Query("SELECT * FROM `p.d.flights`", /*legacy_flag=*/false));
  EXPECT_EQ(done["status"]["errorResult"]["reason"], "invalidQuery") << done.dump();
  EXPECT_THAT(done["status"]["errorResult"].value("message", ""), HasSubstr("useLegacySql"));
}

TEST_F(BigQueryQueryJobsFakeTest, AFailedQueryIsADoneJobWithItsReason) {
  json done = run("join", Query("SELECT COUNT(*) FROM `p.d.flights` JOIN `p.d.x` USING (id)"));
  EXPECT_EQ(done["status"]["errorResult"]["reason"], "invalidQuery") << done.dump();
  done = run("missing", Query("SELECT * FROM `p.d.nope`"));
  EXPECT_EQ(done["status"]["errorResult"]["reason"], "notFound") << done.dump();
  EXPECT_THAT(done["status"]["errorResult"].value("message", ""), HasSubstr("p:d.nope"));
  done = run("column", Query("SELECT id, altitude FROM `p.d.flights`"));
  EXPECT_EQ(done["status"]["errorResult"]["reason"], "invalidQuery") << done.dump();
  EXPECT_THAT(done["status"]["errorResult"].value("message", ""),
              HasSubstr("Unrecognized name: altitude"));
  EXPECT_EQ(
      admin_->insert_job("p", "empty", {{"query", {{"useLegacySql", false}}}}).status().code(),
      absl::StatusCode::kInvalidArgument)
      << "a query job without its query is refused up front";
}

TEST_F(BigQueryQueryJobsFakeTest, AViewIsExpandedAndADestinationTakesTheResultUnderItsDisposition) {
  json view = {{"tableReference", {{"tableId", "early"}}},
               {"view", {{"query", "SELECT id, delay FROM `p.d.flights` WHERE id < 5"}}}};
  ASSERT_TRUE(fake_->add_table("p", "d", view).ok());
  json config = Query("SELECT id FROM d.early WHERE delay >= 2");
  config["query"]["destinationTable"] = {
      {"projectId", "p"}, {"datasetId", "d"}, {"tableId", "out"}};
  json done = run("view", config);
  ASSERT_FALSE(done["status"].contains("errorResult")) << done.dump();
  EXPECT_EQ(rows_of(config["query"]["destinationTable"]).size(), 3u);  // 2, 3, 4
  done = run("again", config);
  EXPECT_TRUE(done["status"].contains("errorResult"))
      << "WRITE_EMPTY, the query default, refuses a table that has rows: " << done.dump();
  config["query"]["writeDisposition"] = "WRITE_TRUNCATE";
  done = run("truncate", config);
  EXPECT_FALSE(done["status"].contains("errorResult")) << done.dump();
  EXPECT_EQ(rows_of(config["query"]["destinationTable"]).size(), 3u);
}

// "Introduction to materialized views": a query of a materialized view returns fresh data (the
// service combines its stored result with changes since); the fake evaluates its query. A
// quoted identifier names the same column as the bare one ("Lexical structure": quoted
// identifiers).
TEST_F(BigQueryQueryJobsFakeTest, AMaterializedViewAnswersItsQueryOnCurrentRows) {
  json view = {
      {"tableReference", {{"tableId", "early_mv"}}},
      {"materializedView", {{"query", "SELECT id, delay FROM `p.d.flights` WHERE id < 5"}}}};
  ASSERT_TRUE(fake_->add_table("p", "d", view).ok());
  json config = Query("SELECT `id`, `DELAY` FROM `p.d.early_mv`");
  config["query"]["destinationTable"] = {
      {"projectId", "p"}, {"datasetId", "d"}, {"tableId", "mv_out"}};
  json done = run("mv", config);
  ASSERT_FALSE(done["status"].contains("errorResult")) << done.dump();
  const std::vector<json> rows = rows_of(config["query"]["destinationTable"]);
  EXPECT_EQ(rows.size(), 5u);  // 0..4
  ASSERT_FALSE(rows.empty());
  EXPECT_TRUE(rows[0].contains("delay")) << rows[0].dump() << ": the table's spelling is kept";
}

TEST_F(BigQueryQueryJobsFakeTest, ARegionalJobIsFoundOnlyWithItsLocation) {
  ASSERT_TRUE(fake_->add_dataset("p", "tokyo", "asia-northeast1").ok());
  json table = {{"tableReference", {{"tableId", "t"}}},
                {"schema", {{"fields", {{{"name", "id"}, {"type", "INT64"}}}}}}};
  ASSERT_TRUE(fake_->add_table("p", "tokyo", table).ok());
  auto inserted = admin_->insert_job("p", "regional", Query("SELECT * FROM `p.tokyo.t`"));
  ASSERT_TRUE(inserted.ok()) << inserted.status();
  EXPECT_EQ((*inserted)["jobReference"]["location"], "asia-northeast1")
      << "a job naming no location runs where its data is";
  EXPECT_EQ(admin_->get_job("p", "regional", "").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(admin_->get_job("p", "regional", "EU").status().code(), absl::StatusCode::kNotFound);
  auto found = admin_->get_job("p", "regional", "asia-northeast1");
  ASSERT_TRUE(found.ok()) << found.status();
  auto named = admin_->insert_job("p", "named", Query("SELECT * FROM `p.d.flights`"), "EU");
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ((*named)["jobReference"]["location"], "EU");
  EXPECT_TRUE(admin_->get_job("p", "named", "").ok()) << "a multi-region job is found without it";
}

}  // namespace
}  // namespace gcpstream::bigquery
