#ifndef GCPSTREAM_PUBSUB_CLIENT_BATCHING_PUBLISHER_H_
#define GCPSTREAM_PUBSUB_CLIENT_BATCHING_PUBLISHER_H_

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gcpstream/pubsub/client/publisher.h"
#include "gcpstream/pubsub/client/publisher_settings.h"
#include "gcpstream/pubsub/client/publisher_stub.h"
#include "gcpstream/util/timer_thread.h"

namespace gcpstream::pubsub {

struct PublisherSettings {
  BatchingSettings batching;
  RetrySettings retry;
  bool enable_message_ordering = false;
};

// The real Publisher over the Publish RPC: batches by count, bytes and delay; retries what the
// retry settings allow with exponential backoff; sequences ordering keys. There is no flow
// controller: whoever publishes bounds its own in-flight work. Thread-safe.
class BatchingPublisher final : public Publisher,
                                public std::enable_shared_from_this<BatchingPublisher> {
 public:
  BatchingPublisher(std::string topic_name, std::shared_ptr<PublisherStub> stub,
                    PublisherSettings settings, std::shared_ptr<util::TimerThread> timers,
                    std::shared_ptr<PublishListener> listener);
  ~BatchingPublisher() override;

  void publish(Message&& message, std::uint64_t token) override;
  void publish_solo(Message&& message, std::uint64_t token) override;
  void flush() override;
  void resume_publish(const std::string& ordering_key) override;
  absl::Status shutdown() override;

 private:
  struct Batch {
    std::string key;
    // The messages live in the request itself (moved in, never copied); a retry resends it.
    std::shared_ptr<google::pubsub::v1::PublishRequest> request;
    std::vector<std::uint64_t> tokens;
    std::size_t bytes = 0;
    std::chrono::steady_clock::time_point created;
    std::size_t size() const { return tokens.size(); }
    // Retry state.
    int attempts = 0;
    std::chrono::steady_clock::time_point first_attempt;
    std::chrono::milliseconds next_delay{0};
    std::chrono::milliseconds next_rpc_timeout{0};
  };
  struct KeyState {
    std::deque<std::shared_ptr<Batch>> closed;  // ready to send, in order
    std::shared_ptr<Batch> open;                // still filling
    bool in_flight = false;
    bool paused = false;
  };
  // Work to run after the lock is released: RPCs to start and outcomes to deliver.
  struct Later {
    std::vector<std::function<void()>> calls;
    std::vector<PublishOutcome> outcomes;
    RetiredMessages retired;
  };
  using Callbacks = Later;

  void add(Message&& message, std::uint64_t token, bool solo);
  void close_open_locked(const std::string& key, Callbacks& later);
  void pump_key_locked(const std::string& key, Callbacks& later);
  void send_locked(std::shared_ptr<Batch> batch, Callbacks& later);
  void on_result(std::shared_ptr<Batch> batch, std::uint64_t call_id,
                 absl::StatusOr<google::pubsub::v1::PublishResponse> result);
  void fail_batch(Batch& batch, const absl::Status& status, Callbacks& later);
  void arm_timer_locked();
  void run(Callbacks& later);

  const std::string topic_;
  std::shared_ptr<PublisherStub> stub_;
  const PublisherSettings settings_;
  std::shared_ptr<util::TimerThread> timers_;
  std::shared_ptr<PublishListener> listener_;

  std::mutex mu_;
  std::condition_variable idle_;
  std::map<std::string, KeyState> keys_;                      // "" is the unordered stream
  std::map<std::uint64_t, std::function<void()>> in_flight_;  // call id -> cancel
  std::set<std::uint64_t> live_calls_;                        // sent, not yet answered
  std::map<std::uint64_t, std::shared_ptr<util::TimerHandle>> retry_timers_;
  std::map<Batch*, std::shared_ptr<Batch>> waiting_retry_;
  std::uint64_t next_call_ = 0;
  int outstanding_ = 0;  // batches sent or waiting for a retry
  std::shared_ptr<util::TimerHandle> timer_;
  std::chrono::steady_clock::time_point timer_due_;
  bool shut_down_ = false;
};

// A factory of BatchingPublishers sharing one channel (stub) and one timer thread.
class BatchingPublisherFactory final : public PublisherFactory {
 public:
  BatchingPublisherFactory(std::shared_ptr<PublisherStub> stub, PublisherSettings settings);
  absl::StatusOr<std::shared_ptr<Publisher>> create(
      const connector::TopicDestination& topic, std::shared_ptr<PublishListener> listener) override;

 private:
  std::shared_ptr<PublisherStub> stub_;
  PublisherSettings settings_;
  std::shared_ptr<util::TimerThread> timers_;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_CLIENT_BATCHING_PUBLISHER_H_
