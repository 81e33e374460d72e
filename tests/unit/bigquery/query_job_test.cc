// The reusable query job id of a BigQuerySource's query route: the same pipeline and query
// configuration always meet under one id, anything that changes what the job would produce
// gives another, and the id is one BigQuery accepts. Spec: ../shared/spec/bigquery.md,
// "Reusing the query job across a failover".
#include "gcpstream/bigquery/source/query_job.h"

#include <gtest/gtest.h>
#include <re2/re2.h>

#include <set>

namespace gcpstream::bigquery {
namespace {

QueryJobSpec Spec() {
  return QueryJobSpec{.query = "SELECT * FROM `p.d.t`",
                      .project = "p",
                      .location = "EU",
                      .result_dataset = "",
                      .reuse_within = std::chrono::hours(1),
                      .job_name = "nightly"};
}

constexpr std::int64_t kBucket = 494000;

TEST(ReusableQueryJobIdTest, TheSameConfigurationAlwaysGivesTheSameValidId) {
  const std::string id = ReusableQueryJobId(Spec(), kBucket);
  EXPECT_EQ(id, ReusableQueryJobId(Spec(), kBucket));
  EXPECT_TRUE(RE2::FullMatch(id, "gcpstream_query_[0-9a-f]{16}_494000")) << id;
  QueryJobSpec polls = Spec();
  polls.poll_initial = std::chrono::milliseconds(5);
  EXPECT_EQ(ReusableQueryJobId(polls, kBucket), id)
      << "how the job is polled is not what it produces";
  EXPECT_NE(ReusableQueryJobId(Spec(), kBucket + 1), id) << "each window has ids of its own";
}

TEST(ReusableQueryJobIdTest, EveryFieldOfTheConfigurationChangesTheId) {
  std::set<std::string> ids = {ReusableQueryJobId(Spec(), kBucket)};
  auto add = [&](QueryJobSpec s) {
    EXPECT_TRUE(ids.insert(ReusableQueryJobId(s, kBucket)).second);
  };
  QueryJobSpec s = Spec();
  s.query += " WHERE x = 1";
  add(s);
  s = Spec();
  s.project = "q";
  add(s);
  s = Spec();
  s.location = "US";
  add(s);
  s = Spec();
  s.result_dataset = "results";
  add(s);
  s = Spec();
  s.reuse_within = std::chrono::hours(2);
  add(s);
  s = Spec();
  s.job_name = "nightly-2";
  add(s);
  // Fields are length-prefixed: moving text from one field into the next is another id.
  s = Spec();
  s.job_name = "nightlyS";
  s.query = "ELECT * FROM `p.d.t`";
  add(s);
  EXPECT_EQ(ids.size(), 8u);
}

}  // namespace
}  // namespace gcpstream::bigquery
