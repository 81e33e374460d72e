// Reassembling rows from PartialResultSets as the Spanner API reference describes them
// (google.spanner.v1.PartialResultSet: "values", "chunked_value" with its merge rules for
// strings and lists, "resume_token").
#include "gcpstream/spanner/client/partial_result_set.h"

#include <gtest/gtest.h>

namespace gcpstream::spanner {
namespace {

namespace sp = google::spanner::v1;
using google::protobuf::Value;

Value S(const std::string& s) {
  Value v;
  v.set_string_value(s);
  return v;
}
Value L(std::vector<Value> items) {
  Value v;
  for (auto& i : items) *v.mutable_list_value()->add_values() = std::move(i);
  return v;
}
Value N(double d) {
  Value v;
  v.set_number_value(d);
  return v;
}

sp::PartialResultSet Part(std::vector<Value> values, bool chunked = false,
                          const std::string& token = "", int width = 0) {
  sp::PartialResultSet p;
  for (auto& v : values) *p.add_values() = std::move(v);
  p.set_chunked_value(chunked);
  p.set_resume_token(token);
  for (int i = 0; i < width; ++i) {
    p.mutable_metadata()->mutable_row_type()->add_fields()->set_name("c" + std::to_string(i));
  }
  return p;
}

std::string Text(const std::vector<std::vector<Value>>& rows) {
  std::string out;
  for (const auto& row : rows) {
    out += "[";
    for (const auto& v : row) out += v.ShortDebugString() + ";";
    out += "]";
  }
  return out;
}

TEST(PartialResultSetTest, ValuesFillRowsOfTheMetadatasWidth) {
  PartialResultSetMerger m;
  ASSERT_TRUE(m.add(Part({S("a"), S("1"), S("b")}, false, "", 2)).ok());
  ASSERT_TRUE(m.add(Part({S("2")})).ok());
  EXPECT_TRUE(m.take_rows().empty()) << "no token yet: a resumed stream would send them again";
  ASSERT_TRUE(m.finish().ok());
  auto rows = m.take_rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1][0].string_value(), "b");
  EXPECT_EQ(rows[1][1].string_value(), "2");
}

TEST(PartialResultSetTest, ChunkedStringsAndListsMergeByTheDocumentedRules) {
  // The reference's examples: "foo" + "bar" = "foobar"; [2, 3] + [4] = [2, 3, 4];
  // ["a", "b"] + ["c", "d"] = ["a", "bc", "d"]; ["a", ["b", "c"]] + [["d"], "e"] =
  // ["a", ["b", "cd"], "e"].
  PartialResultSetMerger m;
  ASSERT_TRUE(m.add(Part({S("foo")}, true, "", 4)).ok());
  ASSERT_TRUE(m.add(Part({S("bar"), L({N(2), N(3)})}, true)).ok());
  ASSERT_TRUE(m.add(Part({L({N(4)}), L({S("a"), S("b")})}, true)).ok());
  ASSERT_TRUE(m.add(Part({L({S("c"), S("d")}), L({S("a"), L({S("b"), S("c")})})}, true)).ok());
  ASSERT_TRUE(m.add(Part({L({L({S("d")}), S("e")})}, false, "t1")).ok());
  auto rows = m.take_rows();
  ASSERT_EQ(rows.size(), 1u) << Text(rows);
  EXPECT_EQ(rows[0][0].string_value(), "foobar");
  EXPECT_EQ(rows[0][1].ShortDebugString(), L({N(2), N(3), N(4)}).ShortDebugString());
  EXPECT_EQ(rows[0][2].ShortDebugString(), L({S("a"), S("bc"), S("d")}).ShortDebugString());
  EXPECT_EQ(rows[0][3].ShortDebugString(),
            L({S("a"), L({S("b"), S("cd")}), S("e")}).ShortDebugString());
  EXPECT_TRUE(m.finish().ok());
}

TEST(PartialResultSetTest, ARewindDropsWhatCameAfterTheLastTokenAndKeepsAConfirmedChunk) {
  PartialResultSetMerger m;
  ASSERT_TRUE(m.add(Part({S("a"), S("x")}, true, "t1", 1)).ok());
  auto first = m.take_rows();
  ASSERT_EQ(first.size(), 1u);
  ASSERT_TRUE(m.add(Part({S("yz"), S("lost")})).ok());  // no token: not confirmed
  ASSERT_TRUE(m.rewind().ok());
  EXPECT_EQ(m.resume_token(), "t1");
  // The resumed stream sends the chunk's continuation again, then the rest.
  ASSERT_TRUE(m.add(Part({S("yz"), S("b")}, false, "t2")).ok());
  ASSERT_TRUE(m.finish().ok());
  auto rows = m.take_rows();
  ASSERT_EQ(rows.size(), 2u) << Text(rows);
  EXPECT_EQ(rows[0][0].string_value(), "xyz");
  EXPECT_EQ(rows[1][0].string_value(), "b");
}

TEST(PartialResultSetTest, PastTheUnconfirmedBoundRowsFlowButTheStreamIsNoLongerResumable) {
  PartialResultSetMerger m(/*max_unconfirmed_bytes=*/10);
  ASSERT_TRUE(m.add(Part({S(std::string(20, 'x'))}, false, "", 1)).ok());
  EXPECT_EQ(m.take_rows().size(), 1u);
  EXPECT_FALSE(m.resumable());
  EXPECT_EQ(m.rewind().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(m.add(Part({S("y")}, false, "t")).ok());
  EXPECT_TRUE(m.resumable()) << "a token makes it resumable again";
}

TEST(PartialResultSetTest, AnUnfinishedRowOverTheBoundWaitsAndTheStreamStaysResumable) {
  PartialResultSetMerger m(/*max_unconfirmed_bytes=*/10);
  ASSERT_TRUE(m.add(Part({S(std::string(20, 'x'))}, false, "", 2)).ok());
  EXPECT_TRUE(m.take_rows().empty()) << "half a row is never released";
  EXPECT_TRUE(m.resumable()) << "nothing went out, so a resume repeats nothing";
  EXPECT_TRUE(m.rewind().ok());
}

TEST(PartialResultSetTest, CorruptStreamsAreInternalErrors) {
  PartialResultSetMerger no_metadata;
  EXPECT_EQ(no_metadata.add(Part({S("a")})).code(), absl::StatusCode::kInternal);
  PartialResultSetMerger number_chunk;
  EXPECT_EQ(number_chunk.add(Part({N(1)}, true, "", 1)).code(), absl::StatusCode::kInternal);
  PartialResultSetMerger mixed;
  ASSERT_TRUE(mixed.add(Part({S("a")}, true, "", 1)).ok());
  EXPECT_EQ(mixed.add(Part({L({S("b")})})).code(), absl::StatusCode::kInternal);
  PartialResultSetMerger open_chunk;
  ASSERT_TRUE(open_chunk.add(Part({S("a")}, true, "", 1)).ok());
  EXPECT_EQ(open_chunk.finish().code(), absl::StatusCode::kInternal);
  PartialResultSetMerger half_row;
  ASSERT_TRUE(half_row.add(Part({S("a")}, false, "", 2)).ok());
  EXPECT_EQ(half_row.finish().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace gcpstream::spanner
