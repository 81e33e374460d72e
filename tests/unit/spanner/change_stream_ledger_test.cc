// The coordinator's partition lineage (Spanner "Change streams partitions, records and
// queries": a child partition may name several parents, and is read only after all of them
// have finished).
#include "gcpstream/spanner/changestream/change_stream_ledger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gcpstream::spanner {
namespace {

using State = ChangeStreamLedgerEntry::State;
using ::testing::ElementsAre;

absl::Time T(int seconds) { return absl::FromUnixSeconds(1'700'000'000 + seconds); }

ChildPartitionsRecord Children(int at, std::vector<ChildPartition> children) {
  ChildPartitionsRecord r;
  r.start_timestamp = T(at);
  r.record_sequence = "00000001";
  r.children = std::move(children);
  return r;
}

std::string Id(const std::string& token, int at) { return ChangeStreamSplitId(token, T(at)); }

TEST(ChangeStreamLedgerTest, InitialQueryChildrenWaitForTheInitialQuery) {
  ChangeStreamLedger ledger;
  ledger.start_fresh(T(0));
  auto initial = ledger.take_ready(0);
  ASSERT_TRUE(initial.has_value());
  EXPECT_TRUE(initial->token.empty());
  // They name no parent: the partition that reported them stands in.
  EXPECT_EQ(ledger.on_children(initial->split_id(), Children(0, {{"a", {}}, {"b", {}}})), 2);
  EXPECT_FALSE(ledger.take_ready(0).has_value());
  // Reported again (the initial query re-read after a restore): known, not added twice.
  EXPECT_EQ(ledger.on_children(initial->split_id(), Children(0, {{"a", {}}, {"b", {}}})), 0);
  ledger.on_finished(initial->split_id());
  auto a = ledger.take_ready(1);
  auto b = ledger.take_ready(0);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->token, "a");
  EXPECT_EQ(b->token, "b");
  EXPECT_EQ(a->position, T(0));
  EXPECT_EQ(ledger.unfinished(), 2u);
  EXPECT_EQ(ledger.count(State::kFinished), 0u);
}

TEST(ChangeStreamLedgerTest, AParentNotDiscoveredYetHoldsTheChildBack) {
  // x splits into b (not read yet); a and b merge into c. a is ahead and reports c first.
  ChangeStreamLedger ledger({ChangeStreamLedgerEntry{{"x", T(0), T(0), {}}, State::kAssigned, 0},
                             ChangeStreamLedgerEntry{{"a", T(0), T(0), {}}, State::kAssigned, 1}});
  ledger.on_children(Id("a", 0), Children(20, {{"c", {"a", "b"}}}));
  ledger.on_finished(Id("a", 0));
  EXPECT_FALSE(ledger.take_ready(1).has_value()) << "c scheduled before b was even read";
  EXPECT_EQ(*ledger.low_watermark(), T(0));
  ledger.on_children(Id("x", 0), Children(10, {{"b", {"x"}}}));
  ledger.on_finished(Id("x", 0));
  auto b = ledger.take_ready(0);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->token, "b");
  EXPECT_FALSE(ledger.take_ready(0).has_value());
  ledger.on_children(b->split_id(), Children(20, {{"c", {"a", "b"}}}));
  ledger.on_finished(b->split_id());
  auto c = ledger.take_ready(0);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->token, "c");
  EXPECT_EQ(ledger.entries().size(), 1u);
}

TEST(ChangeStreamLedgerTest, SplitChildWaitsForItsParent) {
  ChangeStreamLedger ledger({ChangeStreamLedgerEntry{{"p", T(0), T(5), {}}, State::kAssigned, 0}});
  ledger.on_children(Id("p", 0), Children(10, {{"c1", {"p"}}, {"c2", {"p"}}}));
  EXPECT_FALSE(ledger.take_ready(0).has_value()) << "children scheduled before p finished";
  EXPECT_EQ(ledger.count(State::kWaiting), 2u);
  ledger.on_finished(Id("p", 0));
  EXPECT_EQ(ledger.take_ready(0)->token, "c1");
  EXPECT_EQ(ledger.take_ready(0)->token, "c2");
  EXPECT_EQ(ledger.count(State::kFinished), 0u) << "p's proof outlived its children's wait";
}

TEST(ChangeStreamLedgerTest, MergedChildWaitsForBothParentsAndKeepsOnlyAProof) {
  ChangeStreamLedger ledger({ChangeStreamLedgerEntry{{"p1", T(0), T(0), {}}, State::kAssigned, 0},
                             ChangeStreamLedgerEntry{{"p2", T(0), T(0), {}}, State::kAssigned, 1}});
  // Both parents report the same child.
  EXPECT_EQ(ledger.on_children(Id("p1", 0), Children(20, {{"m", {"p1", "p2"}}})), 1);
  ledger.on_finished(Id("p1", 0));
  EXPECT_FALSE(ledger.take_ready(0).has_value()) << "m scheduled while p2 still runs";
  EXPECT_EQ(ledger.count(State::kFinished), 1u) << "p1 kept as proof";
  EXPECT_EQ(ledger.on_children(Id("p2", 0), Children(20, {{"m", {"p1", "p2"}}})), 0);
  ledger.on_finished(Id("p2", 0));
  auto m = ledger.take_ready(1);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->token, "m");
  EXPECT_THAT(m->parent_tokens, ElementsAre("p1", "p2"));
  EXPECT_EQ(ledger.count(State::kFinished), 0u) << "proofs dropped once m was schedulable";
  EXPECT_EQ(ledger.entries().size(), 1u);
}

TEST(ChangeStreamLedgerTest, SplitThenMergeTopology) {
  // a splits into b, c; b and c merge into d.
  ChangeStreamLedger ledger({ChangeStreamLedgerEntry{{"a", T(0), T(0), {}}, State::kAssigned, 0}});
  ledger.on_children(Id("a", 0), Children(10, {{"b", {"a"}}, {"c", {"a"}}}));
  ledger.on_finished(Id("a", 0));
  auto b = ledger.take_ready(0);
  auto c = ledger.take_ready(1);
  ASSERT_TRUE(b && c);
  ledger.on_children(b->split_id(), Children(30, {{"d", {"b", "c"}}}));
  ledger.on_finished(b->split_id());
  EXPECT_FALSE(ledger.take_ready(0).has_value());
  ledger.on_progress(c->split_id(), T(29));
  EXPECT_EQ(*ledger.low_watermark(), T(29)) << "the waiting child (at 30) and c (at 29)";
  ledger.on_children(c->split_id(), Children(30, {{"d", {"b", "c"}}}));
  ledger.on_finished(c->split_id());
  auto d = ledger.take_ready(0);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->token, "d");
  EXPECT_EQ(*ledger.low_watermark(), T(30));
  EXPECT_EQ(ledger.entries().size(), 1u);
}

TEST(ChangeStreamLedgerTest, LowWatermarkCoversWaitingReadyAndAssigned) {
  ChangeStreamLedger ledger({ChangeStreamLedgerEntry{{"x", T(0), T(50), {}}, State::kAssigned, 0},
                             ChangeStreamLedgerEntry{{"y", T(0), T(40), {}}, State::kReady, -1}});
  EXPECT_EQ(*ledger.low_watermark(), T(40));
  ledger.on_progress(Id("y", 0), T(30));  // never backwards
  EXPECT_EQ(*ledger.low_watermark(), T(40));
  ledger.on_children(Id("x", 0), Children(35, {{"z", {"x"}}}));
  EXPECT_EQ(*ledger.low_watermark(), T(35)) << "a waiting child holds the watermark back";
}

TEST(ChangeStreamLedgerTest, ReconcileReturnsWhatNoReaderRestored) {
  ChangeStreamLedger ledger({ChangeStreamLedgerEntry{{"x", T(0), T(5), {}}, State::kAssigned, 0},
                             ChangeStreamLedgerEntry{{"y", T(0), T(6), {}}, State::kAssigned, 1}});
  std::map<std::string, std::pair<int, ChangeStreamPartitionSplit>> held;
  held[Id("y", 0)] = {2, ChangeStreamPartitionSplit{"y", T(0), T(9), {}}};
  ledger.reconcile(held);
  auto x = ledger.take_ready(0);
  ASSERT_TRUE(x.has_value()) << "x was held by nobody after the restore";
  EXPECT_EQ(x->token, "x");
  EXPECT_EQ(x->position, T(5));
  EXPECT_FALSE(ledger.take_ready(0).has_value()) << "y stays with subtask 2";
  EXPECT_EQ(*ledger.low_watermark(), T(5));
}

TEST(ChangeStreamLedgerTest, ReturnAssignedOnlyTouchesThatSubtask) {
  ChangeStreamLedger ledger({ChangeStreamLedgerEntry{{"x", T(0), T(5), {}}, State::kAssigned, 0},
                             ChangeStreamLedgerEntry{{"y", T(0), T(6), {}}, State::kAssigned, 1}});
  ledger.return_assigned({Id("y", 0)});
  auto y = ledger.take_ready(3);
  ASSERT_TRUE(y.has_value());
  EXPECT_EQ(y->token, "y");
  EXPECT_FALSE(ledger.take_ready(3).has_value());
}

TEST(ChangeStreamLedgerTest, StateRoundTripsThroughTheSerializer) {
  ChangeStreamEnumState state;
  state.started = true;
  state.emitted_watermark_ms = 1234;
  state.entries = {ChangeStreamLedgerEntry{{"", T(0), T(3), {}}, State::kAssigned, 1},
                   ChangeStreamLedgerEntry{{"m", T(4), T(4), {"a", "b"}}, State::kWaiting, -1},
                   ChangeStreamLedgerEntry{{"a", T(1), T(4), {}}, State::kFinished, -1}};
  ChangeStreamEnumStateSerializer serializer;
  auto bytes = serializer.serialize(state);
  ASSERT_TRUE(bytes.ok());
  auto back = serializer.deserialize(1, *bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->entries, state.entries);
  EXPECT_EQ(back->emitted_watermark_ms, 1234);
  EXPECT_EQ(serializer.deserialize(2, *bytes).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(
      serializer.deserialize(1, "{\"started\":true,\"entries\":[{\"split\":{}}]}").status().code(),
      absl::StatusCode::kDataLoss);
  ChangeStreamSplitSerializer splits;
  ChangeStreamPartitionSplit split{"tok", T(1), T(2), {"p"}};
  auto split_bytes = splits.serialize(split);
  ASSERT_TRUE(split_bytes.ok());
  EXPECT_EQ(*splits.deserialize(1, *split_bytes), split);
  EXPECT_EQ(splits.deserialize(1, "not json").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(splits
                .deserialize(1,
                             "{\"token\":\"t\",\"start\":\"2020-01-01T00:00:05Z\","
                             "\"position\":\"2020-01-01T00:00:01Z\"}")
                .status()
                .code(),
            absl::StatusCode::kDataLoss)
      << "a position before the start is corrupt";
}

}  // namespace
}  // namespace gcpstream::spanner
