// The exactly-once writer's bookkeeping: which positions become committables, what a
// checkpoint stores, what a restored writer adopts, when a table may be released, and how the
// position serializer treats corrupt state.
#include "gcpstream/bigquery/sink/buffered_stream_ledger.h"

#include <gtest/gtest.h>

namespace gcpstream::bigquery {
namespace {

constexpr char kT1[] = "projects/p/datasets/d/tables/a";
constexpr char kT2[] = "projects/p/datasets/d/tables/b";
const std::string kS1 = std::string(kT1) + "/streams/s1";
const std::string kS2 = std::string(kT1) + "/streams/s2";
const std::string kS3 = std::string(kT2) + "/streams/s3";

TEST(BufferedStreamLedgerTest, OnlyTablesThatAdvancedYieldCommittables) {
  BufferedStreamLedger ledger;
  ledger.acknowledged(kT1, kS1, 0);
  EXPECT_TRUE(ledger.prepare_commit().empty()) << "a fresh stream with no rows commits nothing";
  EXPECT_TRUE(ledger.clean(kT1));
  ledger.acknowledged(kT1, kS1, 10);
  ledger.acknowledged(kT2, kS3, 4);
  EXPECT_FALSE(ledger.clean(kT1));
  auto first = ledger.prepare_commit();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0], (BufferedStreamPosition{kT1, kS1, 10}));
  EXPECT_EQ(first[1], (BufferedStreamPosition{kT2, kS3, 4}));
  EXPECT_TRUE(ledger.clean(kT1));
  ledger.acknowledged(kT1, kS1, 25);
  auto second = ledger.prepare_commit();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0], (BufferedStreamPosition{kT1, kS1, 25}));
  EXPECT_EQ(ledger.snapshot(),
            (std::vector<BufferedStreamPosition>{{kT1, kS1, 25}, {kT2, kS3, 4}}));
}

TEST(BufferedStreamLedgerTest, AReplacementStreamStartsUncommitted) {
  BufferedStreamLedger ledger({{kT1, kS1, 40}});
  auto adopted = ledger.adopt(kT1);
  ASSERT_TRUE(adopted.has_value());
  EXPECT_EQ(*adopted, (BufferedStreamPosition{kT1, kS1, 40}));
  EXPECT_FALSE(ledger.adopt(kT1).has_value()) << "adopted once";
  EXPECT_TRUE(ledger.clean(kT1)) << "the restored position is already named by a committable";
  // The probe abandoned kS1: 5 rows on the fresh stream are the next commit.
  ledger.acknowledged(kT1, kS2, 5);
  EXPECT_EQ(ledger.prepare_commit(), (std::vector<BufferedStreamPosition>{{kT1, kS2, 5}}));
}

TEST(BufferedStreamLedgerTest, RestoredTablesNotYetWrittenStayInTheState) {
  BufferedStreamLedger ledger({{kT1, kS1, 40}, {kT1, kS2, 7}, {kT2, kS3, 3}});
  EXPECT_EQ(ledger.snapshot(), (std::vector<BufferedStreamPosition>{{kT1, kS1, 40}, {kT2, kS3, 3}}))
      << "two positions for one table (a scale-in) keep the first";
  EXPECT_TRUE(ledger.prepare_commit().empty()) << "restored positions are committed already";
  ledger.release(kT2);
  EXPECT_EQ(ledger.snapshot(), (std::vector<BufferedStreamPosition>{{kT1, kS1, 40}}));
}

TEST(BufferedStreamPositionSerializerTest, RoundTripsAndRefusesCorruptState) {
  BufferedStreamPositionSerializer s;
  const BufferedStreamPosition p{kT1, kS1, 1234567890123};
  auto bytes = s.serialize(p);
  ASSERT_TRUE(bytes.ok());
  auto back = s.deserialize(1, *bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, p);
  EXPECT_EQ(s.deserialize(2, *bytes).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.deserialize(1, bytes->substr(0, bytes->size() - 1)).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.deserialize(1, *bytes + "x").status().code(), absl::StatusCode::kDataLoss);
  auto other_table = s.serialize({kT2, kS1, 1});
  EXPECT_EQ(s.deserialize(1, *other_table).status().code(), absl::StatusCode::kDataLoss)
      << "a stream that is not the table's";
  auto negative = s.serialize({kT1, kS1, -1});
  EXPECT_EQ(s.deserialize(1, *negative).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.deserialize(1, std::string("\xff\xff\xff\xff", 4)).status().code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace gcpstream::bigquery
