// The coordinator's partition bookkeeping for Bigtable change streams: token hand-over on split
// and merge, replayed closes, restore reconciliation, and the checkpointed form.
#include "gcpstream/bigtable/changestream/change_stream_ledger.h"

#include <gtest/gtest.h>

namespace gcpstream::bigtable {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

RowKeyRange R(std::string start, std::string end) { return {std::move(start), std::move(end)}; }
PartitionToken T(RowKeyRange range, std::string token) {
  return {std::move(range), std::move(token)};
}

class BigtableLedgerTest : public ::testing::Test {
 protected:
  // Takes every ready partition for subtask 0, by range.
  std::map<RowKeyRange, BigtableChangeStreamSplit> TakeAll() {
    std::map<RowKeyRange, BigtableChangeStreamSplit> out;
    while (auto s = ledger_.take_ready(0)) out[s->partition] = *s;
    return out;
  }
  ChangeStreamLedger ledger_;
};

TEST_F(BigtableLedgerTest, AFreshStartReadsEveryInitialPartitionFromTheStartTime) {
  ledger_.start_fresh({R("", "m"), R("m", "")}, kStart);
  auto taken = TakeAll();
  ASSERT_EQ(taken.size(), 2u);
  for (const auto& [range, split] : taken) {
    EXPECT_TRUE(split.tokens.empty());
    EXPECT_EQ(split.start_time, kStart);
  }
  EXPECT_NE(taken[R("", "m")].id, taken[R("m", "")].id);
  EXPECT_FALSE(ledger_.done());
}

TEST_F(BigtableLedgerTest, ASplitReleasesBothChildrenAtOnceWithTheirTokens) {
  ledger_.start_fresh({R("", "")}, kStart);
  auto parent = *ledger_.take_ready(0);
  PartitionClose close{{T(R("", "m"), "t1"), T(R("m", ""), "t2")}, {R("", "m"), R("m", "")}};
  auto released = ledger_.on_close(parent.id, close);
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_EQ(released->splits, 2);
  EXPECT_EQ(released->merges, 0);
  auto taken = TakeAll();
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[R("", "m")].tokens, std::vector<PartitionToken>{T(R("", "m"), "t1")});
  EXPECT_EQ(taken[R("m", "")].tokens, std::vector<PartitionToken>{T(R("m", ""), "t2")});
}

TEST_F(BigtableLedgerTest, AMergeWaitsForEveryParentsToken) {
  ledger_.start_fresh({R("", "m"), R("m", "")}, kStart);
  auto taken = TakeAll();
  PartitionClose left{{T(R("", "m"), "L")}, {R("", "")}};
  auto first = ledger_.on_close(taken[R("", "m")].id, left);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->merges + first->splits, 0) << "released with half of its range uncovered";
  EXPECT_FALSE(ledger_.take_ready(0).has_value());
  EXPECT_EQ(ledger_.waiting_tokens(), 1u);
  PartitionClose right{{T(R("m", ""), "R")}, {R("", "")}};
  auto second = ledger_.on_close(taken[R("m", "")].id, right);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->merges, 1);
  auto merged = ledger_.take_ready(0);
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(merged->partition, R("", ""));
  EXPECT_EQ(merged->tokens, (std::vector<PartitionToken>{T(R("", "m"), "L"), T(R("m", ""), "R")}));
  EXPECT_EQ(ledger_.waiting_tokens(), 0u);
}

// The documented general case: [B, D) ends into [A, C) and [C, E) with tokens [B, C) and
// [C, D); each successor needs its other pieces from its other parents.
TEST_F(BigtableLedgerTest, ASimultaneousSplitAndMergeReleasesEachSuccessorWhenCovered) {
  ledger_.start_fresh({R("a", "b"), R("b", "d"), R("d", "e")}, kStart);
  auto taken = TakeAll();
  PartitionClose bd{{T(R("b", "c"), "1"), T(R("c", "d"), "2")}, {R("a", "c"), R("c", "e")}};
  ASSERT_TRUE(ledger_.on_close(taken[R("b", "d")].id, bd).ok());
  EXPECT_FALSE(ledger_.take_ready(0).has_value());
  ASSERT_TRUE(ledger_.on_close(taken[R("a", "b")].id, {{T(R("a", "b"), "0")}, {R("a", "c")}}).ok());
  auto ac = ledger_.take_ready(0);
  ASSERT_TRUE(ac.has_value());
  EXPECT_EQ(ac->partition, R("a", "c"));
  EXPECT_EQ(ac->tokens.size(), 2u);
  ASSERT_TRUE(ledger_.on_close(taken[R("d", "e")].id, {{T(R("d", "e"), "3")}, {R("c", "e")}}).ok());
  auto ce = ledger_.take_ready(0);
  ASSERT_TRUE(ce.has_value());
  EXPECT_EQ(ce->partition, R("c", "e"));
}

TEST_F(BigtableLedgerTest, AReplayedCloseChangesNothing) {
  ledger_.start_fresh({R("", "")}, kStart);
  auto parent = *ledger_.take_ready(0);
  PartitionClose close{{T(R("", "m"), "t1"), T(R("m", ""), "t2")}, {R("", "m"), R("m", "")}};
  ASSERT_TRUE(ledger_.on_close(parent.id, close).ok());
  auto again = ledger_.on_close(parent.id, close);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->splits + again->merges, 0);
  EXPECT_EQ(TakeAll().size(), 2u);
}

TEST_F(BigtableLedgerTest, ATokenOutsideEveryNewPartitionIsAProtocolError) {
  ledger_.start_fresh({R("", "")}, kStart);
  auto parent = *ledger_.take_ready(0);
  auto released =
      ledger_.on_close(parent.id, {{T(R("", "m"), "t1"), T(R("m", ""), "t2")}, {R("", "m")}});
  EXPECT_EQ(released.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(released.status().message().find("[m, *)"), std::string::npos) << released.status();
}

TEST_F(BigtableLedgerTest, ProgressMovesTheTokensAndNeverMovesTheLowWatermarkBack) {
  ledger_.start_fresh({R("", "")}, kStart);
  auto split = *ledger_.take_ready(0);
  ledger_.on_progress(split.id, {T(R("", ""), "p1")}, kStart + absl::Seconds(5));
  ledger_.on_progress(split.id, {T(R("", ""), "p2")}, kStart + absl::Seconds(2));
  auto state = ledger_.state(true);
  ASSERT_EQ(state.entries.size(), 1u);
  EXPECT_EQ(state.entries[0].split.tokens, std::vector<PartitionToken>{T(R("", ""), "p2")});
  EXPECT_EQ(state.entries[0].split.low_watermark, kStart + absl::Seconds(5));
}

TEST_F(BigtableLedgerTest, ReconcileKeepsHeldSplitsRequeuesLostOnesAndNamesUnknownOnes) {
  ledger_.start_fresh({R("", "g"), R("g", "p"), R("p", "")}, kStart);
  auto a = *ledger_.take_ready(0);
  auto b = *ledger_.take_ready(1);
  auto c = *ledger_.take_ready(1);
  ChangeStreamLedger restored(ledger_.state(true));
  BigtableChangeStreamSplit newer = a;
  newer.tokens = {T(a.partition, "newer")};
  BigtableChangeStreamSplit stranger = a;
  stranger.id = "(*, *)#99";
  std::map<std::string, std::pair<int, BigtableChangeStreamSplit>> held{
      {a.id, {0, newer}}, {c.id, {1, c}}, {stranger.id, {1, stranger}}};
  auto unknown = restored.reconcile(held);
  EXPECT_EQ(unknown, std::set<std::string>{stranger.id});
  // b was assigned but no reader holds it: ready again.
  auto again = restored.take_ready(0);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->id, b.id);
  EXPECT_FALSE(restored.take_ready(0).has_value());
  auto state = restored.state(true);
  for (const auto& e : state.entries) {
    if (e.split.id == a.id) {
      EXPECT_EQ(e.split.tokens, newer.tokens);
    }
  }
}

// A parent that closes late against a newer topology (queued behind the stream limit, or
// replayed after a restore) hands its tokens to other successors than its sibling did; the
// tokens are pooled by range, so every successor they tile is released and none waits forever.
TEST_F(BigtableLedgerTest, ALateParentClosingAgainstANewerTopologyStillCompletesItsRange) {
  ledger_.start_fresh({R("", "c"), R("c", "")}, kStart);
  auto taken = TakeAll();
  // The two merge: the left parent names the merged partition.
  ASSERT_TRUE(ledger_.on_close(taken[R("", "c")].id, {{T(R("", "c"), "A")}, {R("", "")}}).ok());
  // The merged partition split at d before the right parent closed: the right one is answered
  // OUT_OF_RANGE with the current partitions.
  auto late = ledger_.on_close(taken[R("c", "")].id, {{T(R("c", "d"), "B1"), T(R("d", ""), "B2")},
                                                      {R("", "d"), R("d", "")}});
  ASSERT_TRUE(late.ok()) << late.status();
  auto released = TakeAll();
  ASSERT_EQ(released.size(), 2u);
  EXPECT_EQ(released[R("", "d")].tokens,
            (std::vector<PartitionToken>{T(R("", "c"), "A"), T(R("c", "d"), "B1")}));
  EXPECT_EQ(released[R("d", "")].tokens, std::vector<PartitionToken>{T(R("d", ""), "B2")});
  EXPECT_EQ(ledger_.waiting_tokens(), 0u);
  EXPECT_EQ(ledger_.state(true).successors.size(), 0u) << "the superseded merge is dropped";
}

TEST_F(BigtableLedgerTest, ACloseThatHandsOverOnlyPartOfItsRangeIsAnErrorAndChangesNothing) {
  ledger_.start_fresh({R("", "")}, kStart);
  auto parent = *ledger_.take_ready(0);
  auto partial = ledger_.on_close(parent.id, {{T(R("", "m"), "t1")}, {R("", "m"), R("m", "")}});
  EXPECT_EQ(partial.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(partial.status().message().find("do not cover"), std::string::npos);
  EXPECT_EQ(ledger_.assigned(), 1u);
  auto tokens_only = ledger_.on_close(parent.id, {{T(R("", ""), "t")}, {}});
  EXPECT_EQ(tokens_only.status().code(), absl::StatusCode::kInternal);
}

TEST_F(BigtableLedgerTest, ImpossibleCheckpointedStatesAreDataLoss) {
  ledger_.start_fresh({R("", "m"), R("m", "")}, kStart);
  BigtableChangeStreamEnumStateSerializer serializer;
  auto good = ledger_.state(true);
  auto twice = good;
  twice.entries.push_back(twice.entries.front());
  auto overlapping = good;
  overlapping.entries.back().split.partition = R("a", "");
  auto stale_next = good;
  stale_next.next_id = 1;
  auto far_future = good;
  far_future.entries.front().split.low_watermark = absl::FromUnixSeconds(400'000'000'000);
  for (const auto& bad : {twice, overlapping, stale_next, far_future}) {
    auto bytes = serializer.serialize(bad);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(serializer.deserialize(1, *bytes).status().code(), absl::StatusCode::kDataLoss)
        << *bytes;
  }
  EXPECT_TRUE(serializer.deserialize(1, *serializer.serialize(good)).ok());
}

TEST_F(BigtableLedgerTest, ExpiredPositionsStartOverWithoutTokensUnderNewIds) {
  ledger_.start_fresh({R("", "c"), R("c", "")}, kStart);
  auto taken = TakeAll();
  // The left one closed into a merge (its token waits); the right one progressed recently.
  ASSERT_TRUE(ledger_.on_close(taken[R("", "c")].id, {{T(R("", "c"), "A")}, {R("", "")}}).ok());
  ledger_.on_progress(taken[R("c", "")].id, {T(R("c", ""), "B")}, kStart + absl::Hours(3));
  auto oldest = ledger_.oldest_position();
  ASSERT_TRUE(oldest.has_value());
  EXPECT_EQ(oldest->first, R("", "c"));
  EXPECT_EQ(oldest->second, kStart);
  const absl::Time restart = kStart + absl::Hours(5);
  auto replaced = ledger_.restart_expired(kStart + absl::Hours(1), restart);
  EXPECT_TRUE(replaced.empty()) << "only the handed-over token expired";
  EXPECT_EQ(ledger_.waiting_tokens(), 0u);
  auto fresh = ledger_.take_ready(0);
  ASSERT_TRUE(fresh.has_value());
  EXPECT_EQ(fresh->partition, R("", "c"));
  EXPECT_TRUE(fresh->tokens.empty());
  EXPECT_EQ(fresh->start_time, restart);
  // Now the right one expires too: it is replaced under a new id.
  auto again = ledger_.restart_expired(kStart + absl::Hours(4), restart);
  EXPECT_EQ(again, std::set<std::string>{taken[R("c", "")].id});
  auto right = ledger_.take_ready(0);
  ASSERT_TRUE(right.has_value());
  EXPECT_NE(right->id, taken[R("c", "")].id);
  EXPECT_TRUE(right->tokens.empty());
}

TEST_F(BigtableLedgerTest, AGapOrOverlapInTheKeySpaceIsFound) {
  ledger_.start_fresh({R("", "g"), R("g", "p"), R("p", "")}, kStart);
  EXPECT_FALSE(ledger_.first_gap().has_value());
  auto taken = TakeAll();
  // A merge half done: the token waiting still covers its range.
  ASSERT_TRUE(ledger_.on_close(taken[R("", "g")].id, {{T(R("", "g"), "A")}, {R("", "p")}}).ok());
  EXPECT_FALSE(ledger_.first_gap().has_value());
  auto state = ledger_.state(true);
  auto without_middle = state;
  without_middle.entries.erase(
      std::remove_if(without_middle.entries.begin(), without_middle.entries.end(),
                     [](const auto& e) { return e.split.partition == R("g", "p"); }),
      without_middle.entries.end());
  EXPECT_EQ(ChangeStreamLedger(without_middle).first_gap(), R("g", "p"));
  auto no_tokens = state;
  no_tokens.tokens.clear();
  EXPECT_EQ(ChangeStreamLedger(no_tokens).first_gap(), R("", "g"));
  EXPECT_TRUE(ChangeStreamLedger(BigtableChangeStreamEnumState{}).first_gap().has_value());
}

TEST_F(BigtableLedgerTest, ABoundedPartitionClosingWithoutSuccessorsEndsTheRead) {
  ledger_.start_fresh({R("", "")}, kStart);
  auto split = *ledger_.take_ready(0);
  ASSERT_TRUE(ledger_.on_close(split.id, {}).ok());
  EXPECT_TRUE(ledger_.done());
}

TEST_F(BigtableLedgerTest, TheCheckpointedStateRoundTripsAndCorruptionIsDataLoss) {
  ledger_.start_fresh({R("", "m"), R("m", "")}, kStart);
  auto left = *ledger_.take_ready(0);
  ASSERT_TRUE(ledger_.on_close(left.id, {{T(R("", "m"), "L")}, {R("", "")}}).ok());
  const auto state = ledger_.state(true);
  BigtableChangeStreamEnumStateSerializer serializer;
  auto bytes = serializer.serialize(state);
  ASSERT_TRUE(bytes.ok());
  auto back = serializer.deserialize(1, *bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, state);
  for (const std::string& bad :
       {std::string("{"), std::string("[]"), bytes->substr(0, bytes->size() / 2),
        std::string(R"({"started":true,"entries":[{"split":{"id":"x"}}],"tokens":[],)"
                    R"("successors":[],"next_id":1})")}) {
    EXPECT_EQ(serializer.deserialize(1, bad).status().code(), absl::StatusCode::kDataLoss) << bad;
  }
  EXPECT_EQ(serializer.deserialize(2, *bytes).status().code(), absl::StatusCode::kDataLoss);
}

TEST(BigtableChangeStreamSplitTest, SplitsRoundTripAndTokensMustCoverTheirPartition) {
  BigtableChangeStreamSplit split;
  split.id = "[a, b)#1";
  split.partition = R("a", "b");
  split.tokens = {T(R("a", "a5"), "x"), T(R("a5", "b"), std::string("\0\xff", 2))};
  split.low_watermark = kStart;
  BigtableChangeStreamSplitSerializer serializer;
  auto bytes = serializer.serialize(split);
  ASSERT_TRUE(bytes.ok());
  auto back = serializer.deserialize(1, *bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, split);
  split.tokens.pop_back();
  auto gap = serializer.deserialize(1, *serializer.serialize(split));
  EXPECT_EQ(gap.status().code(), absl::StatusCode::kDataLoss);
}

TEST(BigtableChangeStreamSplitTest, RangesPrintInTheConnectorsNotation) {
  EXPECT_EQ(FormatRowRange(R("", "")), "(*, *)");
  EXPECT_EQ(FormatRowRange(R("", "row-9")), "(*, row-9)");
  EXPECT_EQ(FormatRowRange(R("a,b", "c")), "[a\\x2cb, c)");
  EXPECT_EQ(FormatRowRange(R(std::string("\x00*\\", 3), "")), "[\\x00\\x2a\\x5c, *)");
}

TEST(BigtableChangeStreamSplitTest, TokensCoverOnlyAnExactTiling) {
  EXPECT_TRUE(TokensCover({T(R("m", ""), "2"), T(R("", "m"), "1")}, R("", "")));
  EXPECT_FALSE(TokensCover({T(R("", "m"), "1")}, R("", "")));
  EXPECT_FALSE(TokensCover({T(R("", "m"), "1"), T(R("n", ""), "2")}, R("", "")));
  EXPECT_FALSE(TokensCover({T(R("", ""), "1"), T(R("m", ""), "2")}, R("", "")));
  EXPECT_FALSE(TokensCover({}, R("a", "b")));
}

}  // namespace
}  // namespace gcpstream::bigtable
