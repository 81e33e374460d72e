// The StreamingPull subscriber against an in-memory service: flow control, settlement
// batching, lease extension and expiry, reconnects and permanent failures, shutdown nacks.
#include "gcpstream/pubsub/client/subscriber.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>

#include "tests/support/fake_subscriber.h"

namespace gcpstream::pubsub {
namespace {

using namespace std::chrono_literals;
using testing::FakeSubscriberStub;

class SubscriberTest : public ::testing::Test {
 protected:
  void start(SubscriberSettings settings = {}, std::chrono::milliseconds ack_batch_delay = 5ms) {
    settings.ack_batch_delay = ack_batch_delay;
    SubscriberCallbacks callbacks;
    callbacks.on_messages = [this](std::vector<ReceivedMessage> batch) {
      std::lock_guard lock(mu_);
      for (const auto& m : batch) received_.push_back(m.ack_id);
    };
    callbacks.on_failure = [this](absl::Status s) {
      std::lock_guard lock(mu_);
      failure_ = s;
    };
    subscriber_ = std::make_unique<Subscriber>(stub_, "projects/p/subscriptions/s", settings,
                                               std::move(callbacks));
    subscriber_->start();
  }
  std::vector<std::string> received() {
    std::lock_guard lock(mu_);
    return received_;
  }
  bool wait_received(std::size_t n, std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (received().size() >= n) return true;
      std::this_thread::sleep_for(2ms);
    }
    return false;
  }
  void TearDown() override {
    if (subscriber_) {
      subscriber_->stop();
      EXPECT_TRUE(subscriber_->await_terminated(std::chrono::steady_clock::now() + 10s));
    }
  }

  std::shared_ptr<FakeSubscriberStub> stub_ = std::make_shared<FakeSubscriberStub>();
  std::unique_ptr<Subscriber> subscriber_;
  std::mutex mu_;
  std::vector<std::string> received_;
  absl::Status failure_;
};

TEST_F(SubscriberTest, TheFirstRequestCarriesSubscriptionFlowControlAndDeadline) {
  SubscriberSettings s;
  s.max_outstanding_messages = 7;
  s.max_outstanding_bytes = 7000;
  start(s);
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.first_request_.has_value(); }));
  std::lock_guard lock(stub_->mutex());
  EXPECT_EQ(stub_->first_request_->subscription(), "projects/p/subscriptions/s");
  EXPECT_EQ(stub_->first_request_->max_outstanding_messages(), 7);
  EXPECT_EQ(stub_->first_request_->max_outstanding_bytes(), 7000);
  EXPECT_EQ(stub_->first_request_->stream_ack_deadline_seconds(), 10);  // adaptive start
}

TEST_F(SubscriberTest, StopsReadingAtTheOutstandingLimitAndResumesWhenAcked) {
  SubscriberSettings s;
  s.max_outstanding_messages = 2;
  start(s);
  stub_->deliver({"1", "2"});
  stub_->deliver({"3"});
  ASSERT_TRUE(wait_received(2)) << "received " << received().size();
  // The limit is reached: the stream is not read again, the third response stays queued.
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(received().size(), 2u);
  EXPECT_EQ(subscriber_->outstanding_messages(), 2);
  subscriber_->ack({"ack-1"});
  ASSERT_TRUE(wait_received(3)) << "received " << received().size();
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.acked_.size() == 1; }))
      << stub_->describe();
  std::lock_guard lock(stub_->mutex());
  EXPECT_EQ(stub_->acked_[0], "ack-1");
}

TEST_F(SubscriberTest, NackIsAZeroDeadlineAndReleasesThePermit) {
  start();
  stub_->deliver({"1", "2"});
  ASSERT_TRUE(wait_received(2));
  subscriber_->nack({"ack-2"});
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.nacked_.size() == 1; }))
      << stub_->describe();
  EXPECT_EQ(subscriber_->outstanding_messages(), 1);
}

TEST_F(SubscriberTest, AckConfirmationReportsTheServiceAnswer) {
  start();
  stub_->deliver({"1"});
  ASSERT_TRUE(wait_received(1));
  stub_->set_ack_status(absl::PermissionDeniedError("revoked"));
  std::atomic<int> answered{0};
  absl::Status answer;
  std::mutex answer_mu;
  subscriber_->ack({"ack-1"}, [&](absl::Status s) {
    std::lock_guard lock(answer_mu);
    answer = s;
    answered++;
  });
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.acked_.size() == 1; }));
  for (int i = 0; i < 500 && answered.load() == 0; ++i) std::this_thread::sleep_for(2ms);
  ASSERT_EQ(answered.load(), 1);
  std::lock_guard lock(answer_mu);
  EXPECT_EQ(answer.code(), absl::StatusCode::kPermissionDenied);
}

TEST_F(SubscriberTest, ExtendsLeasesUntilTheExtensionPeriodThenReleasesThem) {
  SubscriberSettings s;
  s.min_duration_per_ack_extension = 2s;
  s.max_duration_per_ack_extension = 2s;  // extend every second (2 s minus 1 s padding)
  s.max_ack_extension_period = 2500ms;
  start(s);
  stub_->deliver({"1"});
  ASSERT_TRUE(wait_received(1));
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return !f.extended_.empty(); }))
      << stub_->describe();
  {
    std::lock_guard lock(stub_->mutex());
    EXPECT_EQ(stub_->extended_[0], "ack-1");
    EXPECT_EQ(stub_->last_extension_seconds_, 2);
  }
  // After the period the lease is dropped and its permit released (redelivery takes over).
  for (int i = 0; i < 500 && subscriber_->leases_expired() == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(subscriber_->leases_expired(), 1);
  EXPECT_EQ(subscriber_->outstanding_messages(), 0);
}

TEST_F(SubscriberTest, EveryLeaseDueInATickIsExtendedInThatTickHoweverManyThereAre) {
  // 50,000 messages held (flow control raised to 100,000): a subscriber that extends at most
  // 2,500 leases per tick lets most of them expire, and the service redelivers them.
  SubscriberSettings s;
  s.max_outstanding_messages = 100'000;
  s.max_outstanding_bytes = 1LL << 30;
  s.min_duration_per_ack_extension = 2s;
  s.max_duration_per_ack_extension = 2s;  // every lease is due again after 1 s
  start(s);
  constexpr int kMessages = 50'000;
  for (int r = 0; r < kMessages / 1000; ++r) {
    std::vector<std::string> ids;
    for (int i = 0; i < 1000; ++i) ids.push_back(std::to_string(r * 1000 + i));
    stub_->deliver(ids);
  }
  ASSERT_TRUE(wait_received(kMessages, 30s)) << received().size();
  // Within two ticks of the last delivery, every lease was extended at least once.
  ASSERT_TRUE(stub_->wait_for(10s, [&](auto& f) {
    std::set<std::string> distinct(f.extended_.begin(), f.extended_.end());
    return distinct.size() == static_cast<std::size_t>(kMessages);
  })) << stub_->describe();
  std::lock_guard lock(stub_->mutex());
  for (const auto& r : stub_->settle_requests_) {
    EXPECT_LE(r.ids, 2500);
    EXPECT_LE(r.bytes, 512u * 1024u);
  }
}

TEST_F(SubscriberTest, SettleRequestsAreCutByEncodedSizeAsWellAsByIdCount) {
  // Ack ids of 207 bytes: 2,500 of them would make a request of about 520 KB, over the
  // service's 512 KiB limit for Acknowledge and ModifyAckDeadline.
  SubscriberSettings s;
  s.max_outstanding_messages = 10'000;
  start(s);
  std::vector<std::string> ids;
  for (int i = 0; i < 3000; ++i) {
    std::string id = std::to_string(i);
    ids.push_back(std::string(203 - id.size(), 'x') + id);  // "ack-" + 203 = 207 bytes
  }
  for (std::size_t at = 0; at < ids.size(); at += 100) {
    stub_->deliver(std::vector<std::string>(ids.begin() + at, ids.begin() + at + 100));
  }
  ASSERT_TRUE(wait_received(ids.size(), 20s)) << received().size();
  auto got = received();
  std::vector<std::string> half(got.begin(), got.begin() + 2900);
  std::vector<std::string> rest(got.begin() + 2900, got.end());
  subscriber_->ack(half);
  subscriber_->nack(rest);
  ASSERT_TRUE(stub_->wait_for(10s, [&](auto& f) {
    return f.acked_.size() == half.size() && f.nacked_.size() == rest.size();
  })) << stub_->describe();
  std::lock_guard lock(stub_->mutex());
  EXPECT_GE(stub_->settle_requests_.size(), 3u) << "2,900 long ids cannot fit in one request";
  for (const auto& r : stub_->settle_requests_) {
    EXPECT_LE(r.ids, 2500);
    EXPECT_LE(r.bytes, 512u * 1024u) << "a request of " << r.ids << " ids";
  }
}

TEST_F(SubscriberTest, ReconnectsAfterARetryableStreamFailure) {
  SubscriberSettings s;
  s.reconnect_initial_backoff = 10ms;
  start(s);
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.reads_waiting_ == 1; }));
  stub_->end_streams(absl::UnavailableError("blip"));
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.streams_opened_ == 2; }))
      << stub_->describe();
  stub_->deliver({"after"});
  ASSERT_TRUE(wait_received(1));
  std::lock_guard lock(mu_);
  EXPECT_TRUE(failure_.ok()) << failure_;
}

TEST_F(SubscriberTest, ReportsANonRetryableStreamFailureOnceAndStops) {
  start();
  ASSERT_TRUE(stub_->wait_for(5s, [](auto& f) { return f.reads_waiting_ == 1; }));
  stub_->end_streams(absl::PermissionDeniedError("no consume permission"));
  ASSERT_TRUE(subscriber_->await_terminated(std::chrono::steady_clock::now() + 5s));
  std::lock_guard lock(mu_);
  EXPECT_EQ(failure_.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(stub_->streams_opened_, 1);
}

TEST_F(SubscriberTest, StopHandsBackEveryMessageStillLeasedWithTheShortReleaseDeadline) {
  start();
  stub_->deliver({"1", "2", "3"});
  ASSERT_TRUE(wait_received(3));
  subscriber_->ack({"ack-1"});
  subscriber_->stop();
  ASSERT_TRUE(subscriber_->await_terminated(std::chrono::steady_clock::now() + 5s));
  std::lock_guard lock(stub_->mutex());
  EXPECT_EQ(stub_->acked_, std::vector<std::string>{"ack-1"});
  // Not a 0 s nack: that would put them back onto this subscriber's own, still open stream.
  EXPECT_TRUE(stub_->nacked_.empty());
  auto released = stub_->released_;
  std::sort(released.begin(), released.end());
  EXPECT_EQ(released, (std::vector<std::string>{"ack-2", "ack-3"}));
}

TEST_F(SubscriberTest, ANackStillQueuedWhenTheSubscriberStopsIsReleasedNotBounced) {
  start({}, std::chrono::hours(1));  // the nack waits in its batch until stop() flushes it
  stub_->deliver({"1", "2"});
  ASSERT_TRUE(wait_received(2));
  subscriber_->nack({"ack-2"});
  subscriber_->stop();
  ASSERT_TRUE(subscriber_->await_terminated(std::chrono::steady_clock::now() + 5s));
  std::lock_guard lock(stub_->mutex());
  EXPECT_TRUE(stub_->nacked_.empty()) << stub_->describe();
  auto released = stub_->released_;
  std::sort(released.begin(), released.end());
  EXPECT_EQ(released, (std::vector<std::string>{"ack-1", "ack-2"}));
}

TEST(SubscriberSettingsTest, RejectsOutOfRangeValuesNamingTheOption) {
  SubscriberSettings s;
  s.max_outstanding_messages = 0;
  EXPECT_NE(s.validate().message().find("flow_control_max_outstanding_element_count"),
            std::string::npos);
  s = {};
  s.min_duration_per_ack_extension = 700s;
  EXPECT_NE(s.validate().message().find("min_duration_per_ack_extension"), std::string::npos);
  s = {};
  s.parallel_pull_count = 0;
  EXPECT_NE(s.validate().message().find("parallel_pull_count"), std::string::npos);
  EXPECT_TRUE(SubscriberSettings{}.validate().ok());
}

}  // namespace
}  // namespace gcpstream::pubsub
