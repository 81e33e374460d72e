// Mutations as google.spanner.v1.Mutation documents them: insert, update, insert_or_update and
// replace carry a table, columns and rows of values; delete carries a table and a KeySet of
// keys, ranges (closed or open bounds) or all rows.
#include "gcpstream/spanner/client/mutation.h"

#include <gtest/gtest.h>

namespace gcpstream::spanner {
namespace {

namespace sp = google::spanner::v1;

TEST(SpannerMutationTest, EachWriteKindLandsInItsOwnOneofWithColumnsAndOneRow) {
  struct Case {
    Mutation::Builder builder;
    sp::Mutation::OperationCase expected;
  };
  std::vector<Case> cases;
  cases.push_back({Mutation::Insert("Flights"), sp::Mutation::kInsert});
  cases.push_back({Mutation::Update("Flights"), sp::Mutation::kUpdate});
  cases.push_back({Mutation::InsertOrUpdate("Flights"), sp::Mutation::kInsertOrUpdate});
  cases.push_back({Mutation::Replace("Flights"), sp::Mutation::kReplace});
  for (auto& c : cases) {
    auto m = std::move(c.builder)
                 .Set("Id", Value::String("DTW#1"))
                 .Set("Delay", Value::Int64(66))
                 .Set("Note", Value::Null(MakeType(sp::STRING)))
                 .Build();
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->proto().operation_case(), c.expected);
    EXPECT_EQ(m->table(), "Flights");
    ASSERT_EQ(m->columns().size(), 3);
    EXPECT_EQ(m->columns()[1], "Delay");
    EXPECT_EQ(m->delete_entries(), 0u);
    EXPECT_EQ(m->wire_bytes(), m->proto().ByteSizeLong());
  }
  auto m = Mutation::Insert("T").Set("A", Value::Int64(5)).Build();
  ASSERT_TRUE(m.ok());
  const auto& row = m->proto().insert().values(0);
  EXPECT_EQ(row.values(0).string_value(), "5");
  EXPECT_EQ(OpName(m->op()), "insert");
}

TEST(SpannerMutationTest, ABadValueIsReportedByBuildNamingTheTableAndColumn) {
  auto m = Mutation::InsertOrUpdate("Orders")
               .Set("Id", Value::Int64(1))
               .Set("Total", Value::Numeric("1.0000000001"))
               .Set("Later", Value::Int64(2))
               .Build();
  ASSERT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("insert_or_update into Orders: column Total"),
            std::string::npos)
      << m.status();
}

TEST(SpannerMutationTest, MappingMistakesAreRefusedAtBuild) {
  EXPECT_FALSE(Mutation::Insert("T").Build().ok()) << "no column";
  EXPECT_FALSE(Mutation::Insert("").Set("A", Value::Int64(1)).Build().ok()) << "no table";
  auto twice = Mutation::Insert("T").Set("A", Value::Int64(1)).Set("A", Value::Int64(2)).Build();
  EXPECT_NE(twice.status().message().find("column A is set twice"), std::string::npos)
      << twice.status();
  EXPECT_FALSE(Mutation::Insert("T").Set("", Value::Int64(1)).Build().ok());
  EXPECT_FALSE(Mutation::Insert("T").Set(std::string("\xc3", 1), Value::Int64(1)).Build().ok());
  auto strukt = Value::Struct({{"a", Value::Int64(1)}});
  ASSERT_TRUE(strukt.ok());
  EXPECT_FALSE(Mutation::Insert("T").Set("S", *strukt).Build().ok());
}

TEST(SpannerMutationTest, DeletesCarryKeysRangesOrAll) {
  KeySet keys;
  keys.AddKey({Value::String("a").value(), Value::Int64(1)})
      .AddRange(KeyRange::ClosedOpen({Value::String("b").value()}, {Value::String("c").value()}))
      .AddRange(KeyRange::OpenClosed({Value::String("x").value()}, {Value::String("y").value()}));
  auto m = Mutation::Delete("Flights", keys);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->table(), "Flights");
  EXPECT_EQ(m->delete_entries(), 3u);
  EXPECT_TRUE(m->columns().empty());
  const auto& ks = m->proto().delete_().key_set();
  ASSERT_EQ(ks.keys_size(), 1);
  EXPECT_EQ(ks.keys(0).values(1).string_value(), "1");
  EXPECT_EQ(ks.ranges(0).start_closed().values(0).string_value(), "b");
  EXPECT_EQ(ks.ranges(0).end_open().values(0).string_value(), "c");
  EXPECT_EQ(ks.ranges(1).start_open().values(0).string_value(), "x");
  EXPECT_EQ(ks.ranges(1).end_closed().values(0).string_value(), "y");

  auto all = Mutation::Delete("Flights", KeySet::All());
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->proto().delete_().key_set().all());
  EXPECT_EQ(all->delete_entries(), 1u);

  auto nothing = Mutation::Delete("Flights", KeySet());
  EXPECT_EQ(nothing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(nothing.status().message().find("key set is empty"), std::string::npos);
}

TEST(SpannerMutationTest, WireBytesCountBytesValuesAtTheirBase64Length) {
  const std::string raw(3000, '\x01');
  auto m = Mutation::Insert("T").Set("B", Value::Bytes(raw)).Build();
  ASSERT_TRUE(m.ok());
  EXPECT_GE(m->wire_bytes(), 4000u) << "3000 raw bytes travel as 4000 base64 characters";
  EXPECT_LT(m->wire_bytes(), 4100u);
}

}  // namespace
}  // namespace gcpstream::spanner
