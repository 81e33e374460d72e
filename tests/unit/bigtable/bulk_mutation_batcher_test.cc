// BulkMutationBatcher against a MutateRows stub the test answers. Pins the batching thresholds,
// the 100,000-mutation request limit, per-entry retries of transient codes with backoff and a
// total timeout, and that every entry's outcome reaches its caller's token.
#include "gcpstream/bigtable/client/bulk_mutation_batcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/bigtable/client/row_mutation_entry.h"
#include "tests/support/fake_bigtable.h"

namespace gcpstream::bigtable {
namespace {

using namespace std::chrono_literals;
using testing::FakeBigtableDataStub;

class RecordingListener final : public MutationListener {
 public:
  void on_outcomes(std::vector<MutationOutcome> outcomes, std::shared_ptr<void> spent) override {
    if (spent) spent_requests++;
    {
      std::lock_guard lock(mu_);
      for (auto& o : outcomes) outcomes_[o.token] = std::move(o);
    }
    cv_.notify_all();
  }
  // Waits until `n` outcomes arrived; fails naming the tokens that did.
  std::map<std::uint64_t, MutationOutcome> wait_for(std::size_t n,
                                                    std::chrono::milliseconds timeout = 5s) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return outcomes_.size() >= n; })) {
      std::string seen;
      for (const auto& [t, o] : outcomes_) seen += " " + std::to_string(t);
      ADD_FAILURE() << "expected " << n << " outcomes within " << timeout.count()
                    << " ms; arrived for tokens:" << seen;
    }
    return outcomes_;
  }
  std::size_t size() {
    std::lock_guard lock(mu_);
    return outcomes_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint64_t, MutationOutcome> outcomes_;

 public:
  std::atomic<int> spent_requests{0};
};

Entry MakeEntry(const std::string& key, int mutations = 1, std::size_t value_bytes = 1) {
  RowMutationEntry e(key);
  for (int i = 0; i < mutations; ++i) e.set_cell("f", "q", 1000, std::string(value_bytes, 'v'));
  return std::move(e).release();
}

class BulkMutationBatcherTest : public ::testing::Test {
 protected:
  std::shared_ptr<BulkMutationBatcher> make(BatchingThresholds t = {},
                                            MutateRowsRetrySettings r = fast_retry()) {
    return std::make_shared<BulkMutationBatcher>("projects/p/instances/i/tables/t", "profile",
                                                 stub_, t, r, timers_, listener_);
  }
  static MutateRowsRetrySettings fast_retry() {
    MutateRowsRetrySettings r;
    r.initial_delay = 1ms;
    r.max_delay = 4ms;
    return r;
  }
  std::size_t wait_calls(std::size_t n) {
    const std::size_t got = stub_->wait_for_calls(n, 5s);
    EXPECT_GE(got, n) << "MutateRows calls made: " << got;
    return got;
  }

  std::shared_ptr<FakeBigtableDataStub> stub_ = std::make_shared<FakeBigtableDataStub>();
  std::shared_ptr<util::TimerThread> timers_ = std::make_shared<util::TimerThread>();
  std::shared_ptr<RecordingListener> listener_ = std::make_shared<RecordingListener>();
};

TEST_F(BulkMutationBatcherTest, SendsAtTheElementCountWithTableAndAppProfileOnTheRequest) {
  BatchingThresholds t;
  t.element_count = 3;
  t.delay = 1h;
  auto b = make(t);
  b->add(MakeEntry("a"), 1);
  b->add(MakeEntry("b"), 2);
  EXPECT_EQ(stub_->size(), 0u) << "sent before the threshold";
  b->add(MakeEntry("c"), 3);
  ASSERT_EQ(stub_->size(), 1u);
  const auto call = stub_->call(0);
  EXPECT_EQ(call.request.table_name(), "projects/p/instances/i/tables/t");
  EXPECT_EQ(call.request.app_profile_id(), "profile");
  ASSERT_EQ(call.request.entries_size(), 3);
  EXPECT_EQ(call.request.entries(2).row_key(), "c");
  EXPECT_LE(call.timeout, 60s) << "an attempt is bounded by the attempt timeout";
  stub_->answer_entries(0, {absl::OkStatus(), absl::OkStatus(), absl::OkStatus()});
  auto outcomes = listener_->wait_for(3);
  for (std::uint64_t token : {1, 2, 3}) EXPECT_TRUE(outcomes[token].status.ok());
  EXPECT_FALSE(outcomes[1].element.has_value()) << "a success hands nothing back";
  EXPECT_EQ(listener_->spent_requests.load(), 1)
      << "the finished request is handed to the listener to free on its own thread";
  ASSERT_TRUE(b->shutdown().ok());
}

TEST_F(BulkMutationBatcherTest, SendsAtTheByteThreshold) {
  BatchingThresholds t;
  t.byte_size = 1000;
  t.delay = 1h;
  auto b = make(t);
  b->add(MakeEntry("a", 1, 600), 1);
  EXPECT_EQ(stub_->size(), 0u);
  b->add(MakeEntry("b", 1, 600), 2);
  ASSERT_EQ(stub_->size(), 1u);
  EXPECT_EQ(stub_->call(0).request.entries_size(), 2);
  stub_->auto_answer = true;
  stub_->answer_entries(0, {absl::OkStatus(), absl::OkStatus()});
  ASSERT_TRUE(b->shutdown().ok());
}

TEST_F(BulkMutationBatcherTest, SendsAPartialBatchWhenTheDelayExpires) {
  BatchingThresholds t;
  t.delay = 20ms;
  auto b = make(t);
  stub_->auto_answer = true;
  b->add(MakeEntry("a"), 7);
  wait_calls(1);
  auto outcomes = listener_->wait_for(1);
  EXPECT_TRUE(outcomes[7].status.ok());
  ASSERT_TRUE(b->shutdown().ok());
}

TEST_F(BulkMutationBatcherTest, NeverCarriesARequestPastTheMutationLimit) {
  BatchingThresholds t;
  t.element_count = 100;
  t.byte_size = BatchingThresholds::kMaxByteSize;
  t.delay = 1h;
  auto b = make(t);
  b->add(MakeEntry("a", 60'000), 1);
  EXPECT_EQ(stub_->size(), 0u);
  b->add(MakeEntry("b", 60'000), 2);  // 120,000 together: the first goes alone
  ASSERT_EQ(stub_->size(), 1u);
  EXPECT_EQ(stub_->call(0).request.entries_size(), 1);
  EXPECT_EQ(stub_->call(0).request.entries(0).row_key(), "a");
  b->flush();
  ASSERT_EQ(stub_->size(), 2u);
  EXPECT_EQ(stub_->call(1).request.entries(0).row_key(), "b");
  stub_->answer_entries(0, {absl::OkStatus()});
  stub_->answer_entries(1, {absl::OkStatus()});
  listener_->wait_for(2);
  ASSERT_TRUE(b->shutdown().ok());
}

TEST_F(BulkMutationBatcherTest, RetriesOnlyTheTransientEntriesAndReportsTheRestPerEntry) {
  auto b = make();
  for (std::uint64_t i = 0; i < 3; ++i) b->add(MakeEntry("k" + std::to_string(i)), 10 + i);
  b->flush();
  ASSERT_EQ(stub_->size(), 1u);
  stub_->answer_entries(0, {absl::OkStatus(), absl::UnavailableError("tablet moved"),
                            absl::InvalidArgumentError("bad timestamp")});
  wait_calls(2);
  const auto retry = stub_->call(1);
  ASSERT_EQ(retry.request.entries_size(), 1) << "only the transient entry is retried";
  EXPECT_EQ(retry.request.entries(0).row_key(), "k1");
  auto before = listener_->wait_for(2);
  EXPECT_TRUE(before[10].status.ok());
  EXPECT_EQ(before[12].status.code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(before[12].element.has_value()) << "a failed entry is handed back";
  EXPECT_EQ(before[12].element->row_key(), "k2");
  stub_->answer_entries(1, {absl::OkStatus()});
  auto after = listener_->wait_for(3);
  EXPECT_TRUE(after[11].status.ok());
  ASSERT_TRUE(b->shutdown().ok());
}

TEST_F(BulkMutationBatcherTest, AWholeCallFailureAppliesToEveryEntry) {
  auto b = make();
  b->add(MakeEntry("a"), 1);
  b->add(MakeEntry("b"), 2);
  b->flush();
  bigtable::MutateRowsResult unavailable;
  unavailable.rpc = absl::UnavailableError("connection reset");
  stub_->answer(0, unavailable);
  wait_calls(2);
  EXPECT_EQ(stub_->call(1).request.entries_size(), 2) << "a transient call failure retries all";
  bigtable::MutateRowsResult denied;
  denied.rpc = absl::PermissionDeniedError("no permission");
  stub_->answer(1, denied);
  auto outcomes = listener_->wait_for(2);
  EXPECT_EQ(outcomes[1].status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(outcomes[2].status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(outcomes[2].element.has_value());
  ASSERT_TRUE(b->shutdown().ok());
}

TEST_F(BulkMutationBatcherTest, AnEntryTheStreamNeverReportedIsRetried) {
  auto b = make();
  b->add(MakeEntry("a"), 1);
  b->add(MakeEntry("b"), 2);
  b->flush();
  stub_->answer_entries(0, {absl::OkStatus()});  // the call ends OK without entry 1
  wait_calls(2);
  ASSERT_EQ(stub_->call(1).request.entries_size(), 1);
  EXPECT_EQ(stub_->call(1).request.entries(0).row_key(), "b");
  stub_->answer_entries(1, {absl::OkStatus()});
  auto outcomes = listener_->wait_for(2);
  EXPECT_TRUE(outcomes[2].status.ok());
  ASSERT_TRUE(b->shutdown().ok());
}

TEST_F(BulkMutationBatcherTest, TransientFailuresStopAtTheTotalTimeout) {
  MutateRowsRetrySettings r = fast_retry();
  r.total_timeout = 60ms;
  auto b = make({}, r);
  b->add(MakeEntry("a"), 1);
  b->flush();
  // Keep answering UNAVAILABLE until the batcher gives up.
  std::size_t answered = 0;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (listener_->size() == 0 && std::chrono::steady_clock::now() < deadline) {
    if (stub_->size() > answered) {
      stub_->answer_entries(answered++, {absl::UnavailableError("still down")});
    } else {
      std::this_thread::sleep_for(1ms);
    }
  }
  auto outcomes = listener_->wait_for(1);
  EXPECT_EQ(outcomes[1].status.code(), absl::StatusCode::kUnavailable);
  EXPECT_GT(answered, 2u) << "retried with backoff before giving up";
  ASSERT_TRUE(b->shutdown().ok());
}

TEST_F(BulkMutationBatcherTest, ASoloEntryTravelsAloneAndSendsTheOpenBatchFirst) {
  auto b = make();
  b->add(MakeEntry("a"), 1);
  b->add_solo(MakeEntry("s"), 2);
  ASSERT_EQ(stub_->size(), 2u);
  EXPECT_EQ(stub_->call(0).request.entries(0).row_key(), "a");
  ASSERT_EQ(stub_->call(1).request.entries_size(), 1);
  EXPECT_EQ(stub_->call(1).request.entries(0).row_key(), "s");
  b->add(MakeEntry("c"), 3);
  EXPECT_EQ(stub_->size(), 2u) << "an entry after a solo one starts a new batch";
  stub_->auto_answer = true;
  stub_->answer_entries(0, {absl::OkStatus()});
  stub_->answer_entries(1, {absl::OkStatus()});
  b->flush();
  listener_->wait_for(3);
  ASSERT_TRUE(b->shutdown().ok());
}

TEST_F(BulkMutationBatcherTest, ShutdownCancelsEverythingAndReturnsOnceEveryOutcomeArrived) {
  auto b = make();
  b->add(MakeEntry("sent"), 1);
  b->flush();  // in flight, never answered by the test
  b->add(MakeEntry("open"), 2);
  ASSERT_TRUE(b->shutdown().ok());
  auto outcomes = listener_->wait_for(2, 0ms);
  EXPECT_EQ(outcomes[1].status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(outcomes[2].status.code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(outcomes[2].element.has_value());
  b->add(MakeEntry("late"), 3);
  auto late = listener_->wait_for(3, 0ms);
  EXPECT_EQ(late[3].status.code(), absl::StatusCode::kCancelled) << "adds after shutdown fail";
}

TEST(RowMutationEntryTest, MutationsKeepTheirOrderAndWireVariants) {
  RowMutationEntry e("row");
  e.delete_cells("f", "c", {1000, 5000})
      .set_cell("f", "c", 2000, "v")
      .set_cell_server_time("f", "s", "v")
      .add_to_cell("sum", "n", 3000, AggregateValue::int64(5))
      .merge_to_cell("hll", "h", 3000, AggregateValue::bytes("state"))
      .add_to_cell("raw", "r", 3000, AggregateValue::raw("x"))
      .delete_family("old")
      .delete_row();
  const Entry& p = e.proto();
  ASSERT_EQ(p.mutations_size(), 8);
  EXPECT_EQ(p.mutations(0).delete_from_column().time_range().start_timestamp_micros(), 1000);
  EXPECT_EQ(p.mutations(0).delete_from_column().time_range().end_timestamp_micros(), 5000);
  EXPECT_EQ(p.mutations(1).set_cell().timestamp_micros(), 2000);
  EXPECT_EQ(p.mutations(2).set_cell().timestamp_micros(), -1) << "server time";
  EXPECT_EQ(p.mutations(3).add_to_cell().input().int_value(), 5);
  EXPECT_EQ(p.mutations(4).merge_to_cell().input().bytes_value(), "state");
  EXPECT_EQ(p.mutations(5).add_to_cell().input().raw_value(), "x");
  EXPECT_EQ(p.mutations(6).delete_from_family().family_name(), "old");
  EXPECT_TRUE(p.mutations(7).has_delete_from_row());
  EXPECT_TRUE(e.validate().ok());
}

TEST(RowMutationEntryTest, TheWriterClockIsTruncatedToMilliseconds) {
  RowMutationEntry e("row");
  e.set_cell("f", "q", "v");
  const std::int64_t ts = e.proto().mutations(0).set_cell().timestamp_micros();
  EXPECT_GT(ts, 0);
  EXPECT_EQ(ts % 1000, 0) << "tables have millisecond granularity";
}

TEST(RowMutationEntryTest, AnEmptyOrOversizedEntryIsRefused) {
  EXPECT_EQ(RowMutationEntry("r").validate().code(), absl::StatusCode::kInvalidArgument);
  RowMutationEntry big("r");
  for (std::int64_t i = 0; i <= kMaxMutationsPerRequest; ++i) big.delete_cells("f", "q");
  EXPECT_EQ(big.validate().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gcpstream::bigtable
