// The publisher client over a fake Publish stub: batching thresholds, retries, ordering keys,
// shutdown. Defaults pinned here so a change is deliberate.
#include "gcpstream/pubsub/client/batching_publisher.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "tests/support/fake_pubsub.h"

namespace gcpstream::pubsub {
namespace {

using namespace std::chrono_literals;
using testing::FakePublisherStub;

google::pubsub::v1::PubsubMessage Message(const std::string& data, const std::string& key = "") {
  google::pubsub::v1::PubsubMessage m;
  m.set_data(data);
  m.set_ordering_key(key);
  return m;
}

// Collects publish outcomes (in the order they were reported).
struct Results final : PublishListener {
  std::mutex mu;
  std::vector<absl::StatusOr<std::string>> values;
  std::vector<std::uint64_t> tokens;
  std::vector<std::string> retired_data;   // the messages handed back after a success
  std::vector<std::string> returned_data;  // the messages handed back with a failure
  void on_published(std::vector<PublishOutcome> outcomes, RetiredMessages retired) override {
    std::lock_guard lock(mu);
    for (auto& o : outcomes) {
      tokens.push_back(o.token);
      values.push_back(std::move(o.message_id));
      if (o.message) returned_data.push_back(o.message->data());
    }
    for (const auto& m : retired) retired_data.push_back(m.data());
  }
  std::size_t size() {
    std::lock_guard lock(mu);
    return values.size();
  }
  bool wait_for(std::size_t n, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (size() < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    return size() >= n;
  }
};

class BatchingPublisherTest : public ::testing::Test {
 protected:
  std::uint64_t next_token = 0;
  std::shared_ptr<BatchingPublisher> make(PublisherSettings settings) {
    return std::make_shared<BatchingPublisher>("projects/p/topics/t", stub_, settings, timers_,
                                               results_);
  }
  std::shared_ptr<Results> results_ = std::make_shared<Results>();
  Results& results = *results_;
  std::shared_ptr<FakePublisherStub> stub_ = std::make_shared<FakePublisherStub>();
  std::shared_ptr<util::TimerThread> timers_ = std::make_shared<util::TimerThread>();
};

TEST(PublisherSettingsTest, DefaultsArePinned) {
  BatchingSettings batching;
  EXPECT_EQ(batching.element_count_threshold, 100);
  EXPECT_EQ(batching.request_byte_threshold, 1024 * 1024);
  EXPECT_EQ(batching.delay_threshold, 10ms);
  RetrySettings retry;
  EXPECT_EQ(retry.total_timeout, 600s);
  EXPECT_EQ(retry.initial_retry_delay, 100ms);
  EXPECT_EQ(retry.retry_delay_multiplier, 4.0);
  EXPECT_EQ(retry.max_retry_delay, 60s);
  EXPECT_EQ(retry.initial_rpc_timeout, 5s);
  EXPECT_EQ(retry.max_rpc_timeout, 600s);
  EXPECT_EQ(retry.max_attempts, 0);
  EXPECT_EQ(retry.retryable_codes.count(absl::StatusCode::kUnavailable), 1u);
  EXPECT_EQ(retry.retryable_codes.count(absl::StatusCode::kInvalidArgument), 0u);
}

TEST_F(BatchingPublisherTest, SendsABatchWhenTheCountThresholdIsReached) {
  PublisherSettings s;
  s.batching.element_count_threshold = 3;
  s.batching.delay_threshold = 10s;
  auto p = make(s);
  for (int i = 0; i < 7; ++i) p->publish(Message("m" + std::to_string(i)), next_token++);
  ASSERT_EQ(stub_->wait_for_calls(2, 2s), 2u);
  EXPECT_EQ(stub_->call(0).request.messages_size(), 3);
  EXPECT_EQ(stub_->call(1).request.messages_size(), 3);
  EXPECT_EQ(stub_->call(0).request.topic(), "projects/p/topics/t");
  p->flush();
  ASSERT_EQ(stub_->wait_for_calls(3, 2s), 3u);
  EXPECT_EQ(stub_->call(2).request.messages_size(), 1);
  for (int i = 0; i < 3; ++i) stub_->answer(i, absl::OkStatus());
  ASSERT_TRUE(results.wait_for(7, 2s));
  for (auto& r : results.values) EXPECT_TRUE(r.ok());
  ASSERT_TRUE(p->shutdown().ok());
}

// A published request's messages go back to the listener (to be freed on the thread that built
// them); a failed one's come back in the outcomes instead, never both.
TEST_F(BatchingPublisherTest, HandsPublishedMessagesBackToTheListenerAndFailedOnesInOutcomes) {
  PublisherSettings s;
  s.batching.element_count_threshold = 2;
  s.batching.delay_threshold = 10s;
  s.retry.max_attempts = 1;
  auto p = make(s);
  for (const char* d : {"a", "b", "c", "d"}) p->publish(Message(d), next_token++);
  ASSERT_EQ(stub_->wait_for_calls(2, 2s), 2u);
  stub_->answer(0, absl::OkStatus());
  stub_->answer(1, absl::InvalidArgumentError("refused"));
  ASSERT_TRUE(results.wait_for(4, 2s));
  ASSERT_TRUE(p->shutdown().ok());
  std::lock_guard lock(results.mu);
  EXPECT_EQ(results.retired_data, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(results.returned_data, (std::vector<std::string>{"c", "d"}));
}

TEST_F(BatchingPublisherTest, SendsWhatWaitedForTheDelayThreshold) {
  PublisherSettings s;
  s.batching.delay_threshold = 20ms;
  auto p = make(s);
  p->publish(Message("a"), next_token++);
  ASSERT_EQ(stub_->wait_for_calls(1, 2s), 1u) << "the delay timer never sent the batch";
  stub_->answer(0, absl::OkStatus());
  ASSERT_TRUE(results.wait_for(1, 2s));
  ASSERT_TRUE(p->shutdown().ok());
}

TEST_F(BatchingPublisherTest, AMessageThatWouldOverflowTheByteThresholdStartsANewBatch) {
  PublisherSettings s;
  s.batching.request_byte_threshold = 100;
  s.batching.delay_threshold = 10s;
  auto p = make(s);
  p->publish(Message(std::string(60, 'a')), next_token++);
  p->publish(Message(std::string(60, 'b')), next_token++);
  ASSERT_EQ(stub_->wait_for_calls(1, 2s), 1u);
  EXPECT_EQ(stub_->call(0).request.messages_size(), 1);
  p->flush();
  ASSERT_EQ(stub_->wait_for_calls(2, 2s), 2u);
  ASSERT_TRUE(p->shutdown().ok());
}

TEST_F(BatchingPublisherTest, RetriesRetryableCodesThenSucceeds) {
  PublisherSettings s;
  s.batching.delay_threshold = 1ms;
  s.retry.initial_retry_delay = 5ms;
  auto p = make(s);
  p->publish(Message("a"), next_token++);
  ASSERT_EQ(stub_->wait_for_calls(1, 2s), 1u);
  stub_->answer(0, absl::UnavailableError("blip"));
  ASSERT_EQ(stub_->wait_for_calls(2, 2s), 2u) << "no retry after UNAVAILABLE";
  stub_->answer(1, absl::OkStatus());
  ASSERT_TRUE(results.wait_for(1, 2s));
  EXPECT_TRUE(results.values[0].ok());
  ASSERT_TRUE(p->shutdown().ok());
}

TEST_F(BatchingPublisherTest, DoesNotRetryInvalidArgumentAndStopsAtMaxAttempts) {
  PublisherSettings s;
  s.batching.delay_threshold = 1ms;
  s.retry.initial_retry_delay = 1ms;
  s.retry.max_attempts = 2;
  auto p = make(s);
  p->publish(Message("a"), next_token++);
  ASSERT_EQ(stub_->wait_for_calls(1, 2s), 1u);
  stub_->answer(0, absl::InvalidArgumentError("bad"));
  ASSERT_TRUE(results.wait_for(1, 2s));
  EXPECT_EQ(results.values[0].status().code(), absl::StatusCode::kInvalidArgument);
  p->publish(Message("b"), next_token++);
  ASSERT_EQ(stub_->wait_for_calls(2, 2s), 2u);
  stub_->answer(1, absl::UnavailableError("down"));
  ASSERT_EQ(stub_->wait_for_calls(3, 2s), 3u);
  stub_->answer(2, absl::UnavailableError("still down"));
  ASSERT_TRUE(results.wait_for(2, 2s));
  EXPECT_EQ(results.values[1].status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(stub_->size(), 3u) << "max_attempts 2: no third attempt";
  ASSERT_TRUE(p->shutdown().ok());
}

TEST_F(BatchingPublisherTest, OrderedKeysSendOneBatchAtATimeAndPauseOnFailure) {
  PublisherSettings s;
  s.enable_message_ordering = true;
  s.retry.unbounded = true;
  s.batching.element_count_threshold = 1;
  auto p = make(s);
  p->publish(Message("k1", "key"), next_token++);
  p->publish(Message("k2", "key"), next_token++);
  p->publish(Message("other", "other-key"), next_token++);
  ASSERT_EQ(stub_->wait_for_calls(2, 2s), 2u);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(stub_->size(), 2u) << "k2 must wait for k1's batch";
  EXPECT_EQ(stub_->call(0).request.messages(0).data(), "k1");
  stub_->answer(0, absl::PermissionDeniedError("denied"));
  ASSERT_TRUE(results.wait_for(2, 2s));
  // k1 failed; k2, queued behind it, failed as a cascade; the key is paused.
  p->publish(Message("k3", "key"), next_token++);
  ASSERT_TRUE(results.wait_for(3, 2s));
  int paused = 0;
  for (auto& r : results.values) paused += IsOrderingKeyPaused(r.status()) ? 1 : 0;
  EXPECT_EQ(paused, 2);
  p->resume_publish("key");
  p->publish(Message("k4", "key"), next_token++);
  ASSERT_EQ(stub_->wait_for_calls(3, 2s), 3u);
  EXPECT_EQ(stub_->call(2).request.messages(0).data(), "k4");
  stub_->answer(1, absl::OkStatus());
  stub_->answer(2, absl::OkStatus());
  ASSERT_TRUE(p->shutdown().ok());
}

TEST_F(BatchingPublisherTest, PublishSoloSendsTheMessageAloneAfterWhatCameBefore) {
  PublisherSettings s;
  s.batching.delay_threshold = 10s;
  auto p = make(s);
  p->publish(Message("a"), next_token++);
  p->publish(Message("b"), next_token++);
  p->publish_solo(Message("solo"), next_token++);
  ASSERT_EQ(stub_->wait_for_calls(2, 2s), 2u);
  EXPECT_EQ(stub_->call(0).request.messages_size(), 2);
  EXPECT_EQ(stub_->call(1).request.messages_size(), 1);
  EXPECT_EQ(stub_->call(1).request.messages(0).data(), "solo");
  stub_->answer(0, absl::OkStatus());
  stub_->answer(1, absl::OkStatus());
  ASSERT_TRUE(p->shutdown().ok());
}

TEST_F(BatchingPublisherTest, ShutdownFailsWhatIsLeftAndReturnsOnceEveryCallbackRan) {
  PublisherSettings s;
  s.batching.delay_threshold = 10s;
  auto p = make(s);
  p->publish(Message("batched"), next_token++);
  p->publish_solo(Message("in flight"), next_token++);
  ASSERT_EQ(stub_->wait_for_calls(2, 2s), 2u);
  auto done = std::async(std::launch::async, [&] { return p->shutdown(); });
  ASSERT_EQ(done.wait_for(5s), std::future_status::ready) << "shutdown hangs";
  EXPECT_TRUE(done.get().ok());
  ASSERT_EQ(results.size(), 2u);
  for (auto& r : results.values) EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace gcpstream::pubsub
