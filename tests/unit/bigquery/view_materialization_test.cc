// The query materialize_views issues for a view (../shared/spec/bigquery.md, "Reading a view
// without writing the query": selected fields folded into the SELECT, a row restriction never).
#include "gcpstream/bigquery/source/view_materialization.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gcpstream::bigquery {
namespace {

using ::testing::HasSubstr;

const TableRef kView = TableRef::of("my-project", "flights", "late_view");

TEST(MaterializingQueryTest, PlainColumnNamesAreFoldedIntoTheSelectBackquoted) {
  auto q = MaterializingQuery(kView, {"origin", "delay_min", "_seq"});
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(*q, "SELECT `origin`, `delay_min`, `_seq` FROM `my-project.flights.late_view`");
}

TEST(MaterializingQueryTest, NoSelectedFieldsSelectsEveryColumn) {
  auto q = MaterializingQuery(kView, {});
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(*q, "SELECT * FROM `my-project.flights.late_view`");
}

// A nested path, or a name SQL would need escaping for, is left to the session's projection.
TEST(MaterializingQueryTest, ANestedPathOrAnOddNameLeavesTheProjectionToTheSession) {
  for (const std::vector<std::string>& fields : std::vector<std::vector<std::string>>{
           {"origin", "legs.to"}, {"origin", "a`b"}, {"1st"}, {"name with space"}}) {
    auto q = MaterializingQuery(kView, fields);
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(*q, "SELECT * FROM `my-project.flights.late_view`") << fields.back();
  }
}

TEST(MaterializingQueryTest, ANameThatCannotBeQuotedIsRefused) {
  for (const TableRef& bad : {TableRef::of("p", "d", "v`; DROP"), TableRef::of("p", "d\\", "v"),
                              TableRef::of("p\n", "d", "v")}) {
    auto q = MaterializingQuery(bad, {});
    EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument) << bad.resource_name();
    EXPECT_THAT(std::string(q.status().message()), HasSubstr("quoted identifier"));
  }
}

}  // namespace
}  // namespace gcpstream::bigquery
