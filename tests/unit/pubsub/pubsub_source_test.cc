// The Pub/Sub source without a service: the split plan, the acknowledgement lifecycle, the
// startup check against a fake admin, the builder's rejections, and the reader against an
// in-memory StreamingPull service (emission, ack on checkpoint completion, nacks, policies,
// memory bounds and parking, the first-checkpoint detector).
#include "gcpstream/pubsub/source/pubsub_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "gcpstream/pubsub/source/ack_tracker.h"
#include "gcpstream/pubsub/source/startup_check.h"
#include "tests/support/fake_contexts.h"
#include "tests/support/fake_subscriber.h"

namespace gcpstream::pubsub {
namespace {

using namespace std::chrono_literals;
using connector::SubscriptionDestination;
using testing::FakeReaderContext;
using testing::FakeSubscriberStub;
using testing::FakeSubscriptionAdmin;
using testing::RecordingReaderOutput;
using testing::TestMailbox;

std::vector<SubscriptionDestination> Subs(int n) {
  std::vector<SubscriptionDestination> out;
  for (int i = 0; i < n; ++i)
    out.push_back(SubscriptionDestination::of("p", fmt::format("s{}", i)));
  return out;
}

// ---------------------------------------------------------------- split plan

TEST(SplitPlanTest, FollowsTheSpecifiedFormulaForEveryShape) {
  struct Case {
    int subs, parallelism;
    OrderingMode mode;
    int splits;
  };
  for (const Case& c : std::vector<Case>{{1, 1, OrderingMode::kNone, 1},
                                         {1, 4, OrderingMode::kNone, 4},
                                         {3, 2, OrderingMode::kNone, 3},
                                         {2, 5, OrderingMode::kNone, 5},
                                         {2, 5, OrderingMode::kPerKey, 2},
                                         {3, 2, OrderingMode::kPerKey, 3},
                                         {4, 4, OrderingMode::kPerKey, 4}}) {
    SCOPED_TRACE(fmt::format("subs={} parallelism={} per_key={}", c.subs, c.parallelism,
                             c.mode == OrderingMode::kPerKey));
    auto splits = PlanSplits(Subs(c.subs), c.mode, c.parallelism);
    ASSERT_EQ(static_cast<int>(splits.size()), c.splits);
    std::set<int> owners;
    std::set<int> covered;
    for (int i = 0; i < c.splits; ++i) {
      EXPECT_EQ(splits[i].index, i);
      EXPECT_EQ(splits[i].subscription_index, i % c.subs);
      EXPECT_EQ(splits[i].subscription.subscription, fmt::format("s{}", i % c.subs));
      owners.insert(SplitOwner(splits[i], c.parallelism));
      covered.insert(splits[i].subscription_index);
    }
    EXPECT_EQ(static_cast<int>(covered.size()), c.subs) << "every subscription is read";
    if (c.mode == OrderingMode::kNone) {
      EXPECT_EQ(static_cast<int>(owners.size()), c.parallelism) << "no subtask idles";
    }
    // Deterministic: the same inputs give the same plan (restores recompute it).
    EXPECT_EQ(PlanSplits(Subs(c.subs), c.mode, c.parallelism), splits);
  }
}

TEST(SplitPlanTest, SerializersRoundTripAndRejectUnknownVersions) {
  PubSubSplitSerializer splits;
  PubSubSplit split{3, 1, SubscriptionDestination::of("p", "s1")};
  auto bytes = splits.serialize(split);
  ASSERT_TRUE(bytes.ok());
  auto back = splits.deserialize(1, *bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, split);
  EXPECT_EQ(splits.deserialize(2, *bytes).status().code(), absl::StatusCode::kFailedPrecondition);
  PubSubEnumeratorStateSerializer states;
  auto s = states.deserialize(1, *states.serialize(PubSubEnumeratorState{true}));
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->seek_done);
  EXPECT_EQ(states.deserialize(9, "x").status().code(), absl::StatusCode::kFailedPrecondition);
}

// ---------------------------------------------------------------- ack lifecycle

TEST(AckTrackerTest, AcknowledgesOnlyWhatTheCompletedCheckpointCovers) {
  AckTracker t;
  t.add_pending("a", "1");
  t.add_pending("a", "2");
  t.add_pending("b", "3");
  EXPECT_TRUE(t.mark_emitted("a", "1"));
  t.bind(1);  // covers 1
  EXPECT_TRUE(t.mark_emitted("b", "3"));
  t.bind(2);  // covers 3; 2 is still pending
  auto done = t.take_completed(1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done["a"], std::vector<std::string>{"1"});
  EXPECT_EQ(t.outstanding(), 2);
  EXPECT_TRUE(t.take_completed(1).empty()) << "nothing is acknowledged twice";
}

TEST(AckTrackerTest, ACompletionHealsAnAbortedCheckpointBelowIt) {
  AckTracker t;
  t.add_pending("a", "1");
  ASSERT_TRUE(t.mark_emitted("a", "1"));
  t.bind(5);  // checkpoint 5 is aborted: no completion ever comes for it
  t.add_pending("a", "2");
  ASSERT_TRUE(t.mark_emitted("a", "2"));
  t.bind(6);
  auto done = t.take_completed(6);
  EXPECT_EQ(done["a"], (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(t.outstanding(), 0);
}

TEST(AckTrackerTest, TakeAllReturnsEveryStateAndLaterEmissionsAreNotAcknowledged) {
  AckTracker t;
  t.add_pending("a", "pending");
  t.add_pending("a", "staged");
  t.add_pending("a", "bound");
  ASSERT_TRUE(t.mark_emitted("a", "bound"));
  t.bind(1);
  ASSERT_TRUE(t.mark_emitted("a", "staged"));
  auto all = t.take_all("a");
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<std::string>{"bound", "pending", "staged"}));
  EXPECT_FALSE(t.mark_emitted("a", "pending")) << "released: must not be acknowledged";
  EXPECT_TRUE(t.take_completed(1).empty());
  EXPECT_EQ(t.outstanding(), 0);
}

// ---------------------------------------------------------------- startup check

PubSubSourceConfig ConfigFor(std::vector<SubscriptionSpec> subs) {
  PubSubSourceConfig c;
  c.subscriptions = std::move(subs);
  return c;
}

TEST(StartupCheckTest, AMissingSubscriptionWithoutCreateOptionsFailsNamingTheOption) {
  FakeSubscriptionAdmin admin;
  auto config = ConfigFor({{SubscriptionDestination::of("p", "gone"), std::nullopt}});
  auto r = RunStartupCheck(admin, config, false, 1'000'000);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("SubscriptionCreateOptions"), std::string::npos)
      << r.status();
}

TEST(StartupCheckTest, RejectsUnorderedSubscriptionsUnderPerKeyExactlyOnceAndNackWithoutDlq) {
  FakeSubscriptionAdmin admin;
  admin.put("p", "plain");
  admin.put("p", "eod", [](auto& s) { s.set_enable_exactly_once_delivery(true); });
  {
    auto c = ConfigFor({{SubscriptionDestination::of("p", "plain"), std::nullopt}});
    c.ordering_mode = OrderingMode::kPerKey;
    auto r = RunStartupCheck(admin, c, false, 0);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(r.status().message().find("ordering"), std::string::npos) << r.status();
  }
  {
    auto c = ConfigFor({{SubscriptionDestination::of("p", "eod"), std::nullopt}});
    auto r = RunStartupCheck(admin, c, false, 0);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(r.status().message().find("exactly-once"), std::string::npos) << r.status();
  }
  {
    auto c = ConfigFor({{SubscriptionDestination::of("p", "plain"), std::nullopt}});
    c.deserialization_failure_policy = DeserializationFailurePolicy::kNack;
    auto r = RunStartupCheck(admin, c, false, 0);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(r.status().message().find("dead-letter"), std::string::npos) << r.status();
  }
}

TEST(StartupCheckTest, ChecksEverySubscriptionBeforeCreatingOrSeekingAny) {
  FakeSubscriptionAdmin admin;
  admin.put("p", "eod", [](auto& s) { s.set_enable_exactly_once_delivery(true); });
  SubscriptionCreateOptions create;
  create.topic = connector::TopicDestination::of("p", "t");
  auto c = ConfigFor({{SubscriptionDestination::of("p", "new"), create},
                      {SubscriptionDestination::of("p", "eod"), std::nullopt}});
  c.start_position = StartPosition::latest();
  auto r = RunStartupCheck(admin, c, false, 5000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(admin.calls, (std::vector<std::string>{"get new", "get eod"}))
      << "a rejection must leave nothing created or rewound";
}

TEST(StartupCheckTest, CreatesWithOptionsThenSeeksOnceAndNotWhenAlreadyDone) {
  FakeSubscriptionAdmin admin;
  admin.put("p", "old");
  SubscriptionCreateOptions create;
  create.topic = connector::TopicDestination::of("p", "t");
  create.retain_acked_messages = true;
  auto c = ConfigFor({{SubscriptionDestination::of("p", "new"), create},
                      {SubscriptionDestination::of("p", "old"), std::nullopt}});
  c.start_position = StartPosition::from_timestamp(1234);
  auto r = RunStartupCheck(admin, c, false, 9'000'000);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->seeked);
  EXPECT_EQ(r->created, std::vector<std::string>{"projects/p/subscriptions/new"});
  EXPECT_EQ(admin.calls, (std::vector<std::string>{"get new", "get old", "create new", "get new",
                                                   "seek new 1234", "seek old 1234"}));
  // "old" neither retains acked messages nor has topic retention: the seek is warned about.
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("old"), std::string::npos);
  admin.calls.clear();
  auto again = RunStartupCheck(admin, c, /*seek_already_done=*/true, 9'000'000);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->seeked);
  EXPECT_EQ(admin.calls, (std::vector<std::string>{"get new", "get old"}));
}

TEST(StartupCheckTest, EarliestRetainedSeeksBackByTheRetention) {
  FakeSubscriptionAdmin admin;
  admin.put("p", "s", [](auto& s) {
    s.set_retain_acked_messages(true);
    s.mutable_message_retention_duration()->set_seconds(600);
  });
  auto c = ConfigFor({{SubscriptionDestination::of("p", "s"), std::nullopt}});
  c.start_position = StartPosition::earliest_retained();
  auto r = RunStartupCheck(admin, c, false, 1'000'000);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(admin.calls.back(), "seek s 400000");
  EXPECT_TRUE(r->warnings.empty());
}

TEST(StartupCheckTest, KeepsTheServiceCodeOfOtherFailures) {
  FakeSubscriptionAdmin admin;
  admin.get_error = absl::PermissionDeniedError("no pubsub.subscriptions.get");
  auto c = ConfigFor({{SubscriptionDestination::of("p", "s"), std::nullopt}});
  EXPECT_EQ(RunStartupCheck(admin, c, false, 0).status().code(),
            absl::StatusCode::kPermissionDenied);
}

// ---------------------------------------------------------------- builder

PubSubDeserializationSchema<std::string> Identity() {
  return PubSubDeserializationSchema<std::string>::payload(
      [](const std::string& d) -> absl::StatusOr<std::string> { return d; });
}

TEST(PubSubSourceBuilderTest, RejectsInvalidCombinationsNamingTheOptions) {
  auto base = [] {
    return PubSubSource<std::string>::builder().subscription(SubscriptionDestination::of("p", "s"));
  };
  EXPECT_NE(PubSubSource<std::string>::builder()
                .deserializer(Identity())
                .build()
                .status()
                .message()
                .find("subscription"),
            std::string::npos);
  EXPECT_NE(base().build().status().message().find("deserializer"), std::string::npos);
  PubSubSubscriberOptions parallel;
  parallel.parallel_pull_count = 2;
  auto per_key = base()
                     .deserializer(Identity())
                     .subscriber_options(parallel)
                     .ordering_mode(OrderingMode::kPerKey)
                     .build();
  EXPECT_NE(per_key.status().message().find("parallel_pull_count"), std::string::npos);
  SubscriptionCreateOptions unordered;
  unordered.topic = connector::TopicDestination::of("p", "t");
  auto create = PubSubSource<std::string>::builder()
                    .subscription(SubscriptionDestination::of("p", "s"), unordered)
                    .deserializer(Identity())
                    .ordering_mode(OrderingMode::kPerKey)
                    .build();
  EXPECT_NE(create.status().message().find("enable_message_ordering"), std::string::npos);
  auto nack = PubSubSource<std::string>::builder()
                  .subscription(SubscriptionDestination::of("p", "s"), unordered)
                  .deserializer(Identity())
                  .deserialization_failure_policy(DeserializationFailurePolicy::kNack)
                  .build();
  EXPECT_NE(nack.status().message().find("dead_letter_policy"), std::string::npos);
  EXPECT_FALSE(base().deserializer(Identity()).emulator_endpoint("no-port").build().ok());
  auto twice =
      base().subscription(SubscriptionDestination::of("p", "s")).deserializer(Identity()).build();
  EXPECT_NE(twice.status().message().find("twice"), std::string::npos);
  auto ok = base().deserializer(Identity()).build();
  ASSERT_TRUE(ok.ok()) << ok.status();
  auto lineage = (*ok)->lineage_vertex();
  ASSERT_EQ(lineage.datasets.size(), 1u);
  EXPECT_FALSE(lineage.bounded);
}

// ---------------------------------------------------------------- reader

class PubSubReaderTest : public ::testing::Test {
 protected:
  void make(PubSubSubscriberOptions options = {},
            DeserializationFailurePolicy policy = DeserializationFailurePolicy::kFail,
            int splits = 1) {
    if (options.max_records_per_fetch == PubSubSubscriberOptions{}.max_records_per_fetch) {
      options.max_records_per_fetch = 100;
    }
    auto builder = PubSubSource<std::string>::builder();
    for (int i = 0; i < splits; ++i)
      builder.subscription(SubscriptionDestination::of("p", fmt::format("s{}", i)));
    builder.subscriber_options(options)
        .deserialization_failure_policy(policy)
        .deserializer(PubSubDeserializationSchema<std::string>::of(
            [](const google::pubsub::v1::PubsubMessage& m, Collector<std::string>& out) {
              if (m.data().find("bad") != std::string::npos) {
                out.collect("prefix-of-" + m.message_id());
                return absl::InvalidArgumentError("not a record");
              }
              if (m.data().find("empty") != std::string::npos) return absl::OkStatus();
              out.collect(m.data());
              return absl::OkStatus();
            }))
        .clients(PubSubSourceClients{
            nullptr, [stub = stub_]() -> absl::StatusOr<std::shared_ptr<SubscriberStub>> {
              return std::static_pointer_cast<SubscriberStub>(stub);
            }});
    auto source = builder.build();
    ASSERT_TRUE(source.ok()) << source.status();
    source_ = *source;
    auto reader = source_->create_reader(context_);
    ASSERT_TRUE(reader.ok()) << reader.status();
    reader_ = *std::move(reader);
    ASSERT_TRUE(reader_->start().ok());
    std::vector<PubSubSplit> assigned;
    for (int i = 0; i < splits; ++i) {
      assigned.push_back(
          PubSubSplit{i, i, SubscriptionDestination::of("p", fmt::format("s{}", i))});
    }
    ASSERT_TRUE(reader_->add_splits(assigned).ok());
  }
  PubSubReaderCore& core() {
    return static_cast<PubSubSourceReader<std::string>&>(*reader_).core();
  }
  // Polls until `n` records were emitted, or fails naming what did arrive.
  absl::Status poll_until(std::size_t n, std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (output_.emitted.size() < n) {
      auto status = reader_->poll_next(output_);
      if (!status.ok()) return status.status();
      if (std::chrono::steady_clock::now() > deadline) {
        return absl::DeadlineExceededError(
            fmt::format("wanted {} records, {} arrived", n, output_.emitted.size()));
      }
      if (*status == InputStatus::kNothingAvailable) std::this_thread::sleep_for(1ms);
    }
    return absl::OkStatus();
  }
  // Polls until the reader reports an error (or the deadline).
  absl::Status poll_for_error(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      auto status = reader_->poll_next(output_);
      if (!status.ok()) return status.status();
      std::this_thread::sleep_for(2ms);
    }
    return absl::OkStatus();
  }
  void TearDown() override {
    if (reader_) {
      EXPECT_TRUE(reader_->close().ok());
    }
  }
  std::vector<std::string> sorted(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  }

  std::shared_ptr<FakeSubscriberStub> stub_ = std::make_shared<FakeSubscriberStub>();
  TestMailbox mailbox_;
  FakeReaderContext context_{mailbox_};
  std::shared_ptr<PubSubSource<std::string>> source_;
  std::unique_ptr<SourceReader<std::string, PubSubSplit>> reader_;
  RecordingReaderOutput<std::string> output_;
};

TEST_F(PubSubReaderTest, EmitsWithThePublishTimeAndAcksOnlyWhenTheCheckpointCompletes) {
  make();
  stub_->deliver({"1", "2"}, /*publish_ms=*/1700000000123);
  ASSERT_TRUE(poll_until(2).ok()) << poll_until(2);
  EXPECT_EQ(output_.emitted[0].value, "payload-1");
  EXPECT_EQ(output_.emitted[0].timestamp_ms, 1700000000123);
  EXPECT_EQ(core().pending_acks(), 2);
  // Emitted but no checkpoint yet: nothing is acknowledged.
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(stub_->wait_for(0ms, [](auto& f) { return f.acked_.empty(); }));
  ASSERT_TRUE(reader_->snapshot_state(1).ok());
  stub_->deliver({"3"});
  ASSERT_TRUE(poll_until(3).ok());
  ASSERT_TRUE(reader_->notify_checkpoint_complete(1).ok());
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.acked_.size() == 2; }))
      << stub_->describe();
  {
    std::lock_guard lock(stub_->mutex());
    EXPECT_EQ(sorted(stub_->acked_), (std::vector<std::string>{"ack-1", "ack-2"}));
  }
  EXPECT_EQ(core().pending_acks(), 1) << "message 3 was emitted after checkpoint 1";
  EXPECT_EQ(context_.registry().snapshot().size() > 0, true);
}

TEST_F(PubSubReaderTest, AnAbortedCheckpointIsHealedByTheNextCompletion) {
  make();
  stub_->deliver({"1"});
  ASSERT_TRUE(poll_until(1).ok());
  ASSERT_TRUE(reader_->snapshot_state(1).ok());
  ASSERT_TRUE(reader_->notify_checkpoint_aborted(1).ok());
  stub_->deliver({"2"});
  ASSERT_TRUE(poll_until(2).ok());
  ASSERT_TRUE(reader_->snapshot_state(2).ok());
  ASSERT_TRUE(reader_->notify_checkpoint_complete(2).ok());
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.acked_.size() == 2; }))
      << stub_->describe();
}

TEST_F(PubSubReaderTest, CloseNacksPendingStagedAndBoundMessages) {
  make();
  stub_->deliver({"bound"});
  ASSERT_TRUE(poll_until(1).ok());
  ASSERT_TRUE(reader_->snapshot_state(1).ok());  // bound to 1, never completed
  stub_->deliver({"staged"});
  ASSERT_TRUE(poll_until(2).ok());
  stub_->deliver({"pending"});
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.pending_responses() == 0; }));
  for (int i = 0; i < 500 && core().pending_acks() < 3; ++i) std::this_thread::sleep_for(2ms);
  ASSERT_EQ(core().pending_acks(), 3);
  ASSERT_TRUE(reader_->close().ok());
  std::lock_guard lock(stub_->mutex());
  EXPECT_TRUE(stub_->acked_.empty());
  // Handed back with the stopping subscriber's short deadline (never a 0 s nack into its own
  // closing stream).
  EXPECT_TRUE(stub_->nacked_.empty());
  auto released = sorted(stub_->released_);
  released.erase(std::unique(released.begin(), released.end()), released.end());
  EXPECT_EQ(released, (std::vector<std::string>{"ack-bound", "ack-pending", "ack-staged"}));
}

TEST_F(PubSubReaderTest, ADownstreamFailureNacksTheMessageAtOnce) {
  make();
  output_.fail_next = absl::InternalError("downstream operator failed");
  stub_->deliver({"1"});
  auto status = poll_until(1, 5s);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.nacked_.size() == 1; }))
      << stub_->describe();
  EXPECT_EQ(core().pending_acks(), 0);
}

TEST_F(PubSubReaderTest, FailPolicyFailsNamingTheMessageAndCountsTheError) {
  make();
  stub_->deliver({"bad1"});
  auto status = poll_for_error(5s);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("bad1"), std::string::npos) << status;
  EXPECT_EQ(core().num_records_in_errors().get(), 1);
}

TEST_F(PubSubReaderTest, DropPolicyKeepsTheEmittedPrefixAndAcksWithTheCheckpoint) {
  make({}, DeserializationFailurePolicy::kDrop);
  stub_->deliver({"bad1", "2", "empty3"});
  ASSERT_TRUE(poll_until(2).ok()) << poll_until(2);
  EXPECT_EQ(output_.emitted[0].value, "prefix-of-bad1");
  EXPECT_EQ(output_.emitted[1].value, "payload-2");
  for (int i = 0; i < 500 && core().records_skipped().get() < 1; ++i) {
    ASSERT_TRUE(reader_->poll_next(output_).ok());
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(core().records_skipped().get(), 1) << "empty3 produced no record";
  EXPECT_EQ(core().num_records_in_errors().get(), 1);
  ASSERT_TRUE(reader_->snapshot_state(1).ok());
  ASSERT_TRUE(reader_->notify_checkpoint_complete(1).ok());
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.acked_.size() == 3; }))
      << stub_->describe();
}

TEST_F(PubSubReaderTest, NackPolicyReleasesTheBadMessageForRedelivery) {
  make({}, DeserializationFailurePolicy::kNack);
  stub_->deliver({"bad1", "2"});
  ASSERT_TRUE(poll_until(2).ok());
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.nacked_.size() == 1; }))
      << stub_->describe();
  ASSERT_TRUE(reader_->snapshot_state(1).ok());
  ASSERT_TRUE(reader_->notify_checkpoint_complete(1).ok());
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.acked_.size() == 1; }));
  std::lock_guard lock(stub_->mutex());
  EXPECT_EQ(stub_->nacked_[0], "ack-bad1");
  EXPECT_EQ(stub_->acked_[0], "ack-2");
}

TEST_F(PubSubReaderTest, CrossingTheHardBudgetWhileConsumingNacksAndAsksTheCoordinatorToFail) {
  PubSubSubscriberOptions options;
  options.subscriber_buffer_max_messages = 3;
  options.max_records_per_fetch = 1;
  make(options);
  // Not polled: the downstream has stopped. The fetcher takes one message per fetch until its
  // queue (2 batches) and its held batch are full, then the subscriber buffer fills.
  auto settle = [&](std::int64_t pending, std::int64_t buffered) {
    for (int i = 0; i < 2500; ++i) {
      if (core().pending_acks() == pending && core().buffered_messages() == buffered) return true;
      std::this_thread::sleep_for(2ms);
    }
    return false;
  };
  for (int i = 1; i <= 3; ++i) {
    stub_->deliver({std::to_string(i)});
    ASSERT_TRUE(settle(i, 0)) << "message " << i << " did not reach the fetcher";
  }
  for (int i = 4; i <= 6; ++i) {
    stub_->deliver({std::to_string(i)});
    ASSERT_TRUE(settle(i, i - 3)) << "message " << i << " was not buffered";
  }
  EXPECT_EQ(context_.event_count(), 0u) << "at the budget, not over it";
  stub_->deliver({"7"});
  for (int i = 0; i < 2500 && context_.event_count() == 0; ++i) std::this_thread::sleep_for(2ms);
  ASSERT_EQ(context_.event_count(), 1u) << stub_->describe();
  {
    std::lock_guard lock(context_.events_mu);
    auto* overflow = dynamic_cast<const SubscriberBufferOverflow*>(context_.events[0].get());
    ASSERT_NE(overflow, nullptr);
    EXPECT_NE(overflow->message.find("subscriber_buffer_max_messages"), std::string::npos);
  }
  EXPECT_EQ(core().buffered_messages(), 3);
  EXPECT_EQ(core().pending_acks(), 6) << "3 with the fetcher, 3 buffered; the 7th is refused";
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) {
    // Refused, and every subscriber stopped: handed back with the stopping deadline.
    return std::find(f.released_.begin(), f.released_.end(), "ack-7") != f.released_.end();
  })) << stub_->describe();
}

TEST_F(PubSubReaderTest, CrossingTheHardBudgetWithEverySplitPausedParksAndResumeReopens) {
  PubSubSubscriberOptions options;
  options.subscriber_buffer_max_messages = 2;
  make(options);
  ASSERT_TRUE(reader_->pause_or_resume_splits({"projects/p/subscriptions/s0#0"}, {}).ok());
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.reads_waiting_ == 1; }));
  std::this_thread::sleep_for(20ms);  // the pause reaches the fetcher thread
  stub_->deliver({"1", "2", "3"});
  for (int i = 0; i < 2500 && core().parked_splits() == 0; ++i) std::this_thread::sleep_for(2ms);
  ASSERT_EQ(core().parked_splits(), 1) << stub_->describe();
  EXPECT_EQ(context_.event_count(), 0u) << "a parked group does not fail the job";
  EXPECT_EQ(core().buffered_messages(), 0);
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.released_.size() >= 3; }))
      << stub_->describe();
  ASSERT_TRUE(reader_->pause_or_resume_splits({}, {"projects/p/subscriptions/s0#0"}).ok());
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.streams_opened_ == 2; }))
      << stub_->describe();
  stub_->deliver({"1"});  // the redelivery
  ASSERT_TRUE(poll_until(1).ok());
  EXPECT_EQ(core().parked_splits(), 0);
}

TEST_F(PubSubReaderTest, APausedSplitOverItsOwnBoundIsParked) {
  PubSubSubscriberOptions options;
  options.paused_split_buffer_max_messages = 2;
  make(options);
  ASSERT_TRUE(reader_->pause_or_resume_splits({"projects/p/subscriptions/s0#0"}, {}).ok());
  std::this_thread::sleep_for(20ms);
  stub_->deliver({"1", "2", "3"});
  for (int i = 0; i < 2500 && core().parked_splits() == 0; ++i) std::this_thread::sleep_for(2ms);
  EXPECT_EQ(core().parked_splits(), 1) << stub_->describe();
}

TEST_F(PubSubReaderTest, ANonRetryableSubscriberFailureFailsTheReader) {
  make();
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.reads_waiting_ == 1; }));
  stub_->end_streams(absl::NotFoundError("subscription deleted"));
  auto status = poll_for_error(5s);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
}

TEST_F(PubSubReaderTest, NoCheckpointWithinTheFirstCheckpointTimeoutFailsNamingTheInterval) {
  PubSubSubscriberOptions options;
  options.first_checkpoint_timeout = 300ms;
  make(options);
  stub_->deliver({"1"});
  ASSERT_TRUE(poll_until(1).ok());
  auto status = poll_for_error(5s);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("checkpointing.interval"), std::string::npos) << status;
}

TEST_F(PubSubReaderTest, ABarrierRetiresTheFirstCheckpointDetector) {
  PubSubSubscriberOptions options;
  options.first_checkpoint_timeout = 300ms;
  make(options);
  stub_->deliver({"1"});
  ASSERT_TRUE(poll_until(1).ok());
  ASSERT_TRUE(reader_->snapshot_state(1).ok());
  stub_->deliver({"2"});
  ASSERT_TRUE(poll_until(2).ok());
  EXPECT_TRUE(poll_for_error(800ms).ok());
}

TEST_F(PubSubReaderTest, AwaitAckConfirmationFailsTheCheckpointOnTimeout) {
  PubSubSubscriberOptions options;
  options.await_ack_confirmation = 200ms;
  make(options);
  stub_->deliver({"1"});
  ASSERT_TRUE(poll_until(1).ok());
  stub_->set_hang_acks(true);
  ASSERT_TRUE(reader_->snapshot_state(1).ok());
  auto status = reader_->notify_checkpoint_complete(1);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(status.message().find("await_ack_confirmation"), std::string::npos) << status;
  stub_->set_hang_acks(false);
}

TEST_F(PubSubReaderTest, TwoSubscriptionsOnOneReaderAreBothConsumed) {
  make({}, DeserializationFailurePolicy::kFail, /*splits=*/2);
  stub_->deliver({"1"});
  stub_->deliver({"2"});
  ASSERT_TRUE(poll_until(2).ok()) << poll_until(2);
  EXPECT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.streams_opened_ == 2; }))
      << "one subscriber per subscription: " << stub_->describe();
}

}  // namespace
}  // namespace gcpstream::pubsub

namespace gcpstream::pubsub {
namespace {

TEST(PubSubSubscriberOptionsTest, WarnsWhenTheCheckpointIntervalOutrunsLeasesOrCapsASplit) {
  PubSubSubscriberOptions o;
  EXPECT_TRUE(o.warnings_at(std::chrono::milliseconds(0)).empty()) << "checkpointing off";
  // The defaults at 1 s: 1,000 messages per interval caps a split at 1,000 messages/s.
  auto w = o.warnings_at(std::chrono::seconds(1));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("at most 1000 messages/s"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("flow_control_max_outstanding_element_count"), std::string::npos);
  o.flow_control_max_outstanding_element_count = 100'000;
  EXPECT_TRUE(o.warnings_at(std::chrono::seconds(1)).empty());
  // 60 s checkpoints with leases extended for at most 90 s: a message received after a
  // checkpoint waits up to 120 s for its acknowledgement.
  o.max_ack_extension_period = std::chrono::seconds(90);
  w = o.warnings_at(std::chrono::seconds(60));
  ASSERT_FALSE(w.empty());
  EXPECT_NE(w[0].find("max_ack_extension_period"), std::string::npos) << w[0];
  o.max_ack_extension_period = std::chrono::seconds(120);
  for (const auto& line : o.warnings_at(std::chrono::seconds(60))) {
    EXPECT_EQ(line.find("max_ack_extension_period ("), std::string::npos) << line;
  }
}

TEST(UndecodableMessageLogTest, LogsTheFirstAtOnceThenAtMostOneLinePerIntervalWithACount) {
  auto now = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
  UndecodableMessageLog log(std::chrono::seconds(10), [&] { return now; });
  const absl::Status cause = absl::InvalidArgumentError("not JSON");
  EXPECT_TRUE(log.log("m1", "projects/p/subscriptions/s", cause, "dropped"))
      << "a single bad message is never silent";
  for (int i = 0; i < 500; ++i) {
    now += std::chrono::milliseconds(10);
    EXPECT_FALSE(log.log("m", "projects/p/subscriptions/s", cause, "dropped"));
  }
  EXPECT_EQ(log.unreported(), 500);
  now += std::chrono::seconds(6);  // 11 s after the first line
  EXPECT_TRUE(log.log("m502", "projects/p/subscriptions/s", cause, "dropped"));
  EXPECT_EQ(log.unreported(), 0) << "the line reported the 500 held back";
}

}  // namespace
}  // namespace gcpstream::pubsub
