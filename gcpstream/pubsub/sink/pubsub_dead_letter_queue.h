#ifndef GCPSTREAM_PUBSUB_SINK_PUBSUB_DEAD_LETTER_QUEUE_H_
#define GCPSTREAM_PUBSUB_SINK_PUBSUB_DEAD_LETTER_QUEUE_H_

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "gcpstream/connector/client_options.h"
#include "gcpstream/connector/dead_letter_queue.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/pubsub/client/publisher.h"

namespace gcpstream::pubsub {

// A DeadLetterQueue publishing each failed element to an existing Pub/Sub topic; it serves
// every connector (it reads failures through FailedElement). The message data is the element's
// payload bytes (empty when the failure had none); attributes say where it came from:
//   gcpstream.connector, gcpstream.destination, gcpstream.status_code (a gRPC code name),
//   gcpstream.error (the message, at most 1024 bytes), gcpstream.service_rejection.
//
// Publishes are batched and awaited in flush(). max_in_flight_messages bounds what an interval
// can accumulate: at the bound an offer waits for everything outstanding; 0 publishes each
// element synchronously; -1 waits only in flush(). Every such wait is bounded by flush_timeout
// (one deadline per wait) and throws DEADLINE_EXCEEDED on expiry, failing the checkpoint or the
// record's task. close() releases the publisher under shutdown_timeout.
//
// Metrics on the hosting writer's group: deadLettersPublished, inFlightDeadLetters,
// deadLetterFlushMillis (the last wait), longestDeadLetterFlushMillis,
// deadLetterPublisherShutdownsAbandoned (process-wide).
class PubSubDeadLetterQueue final : public connector::DeadLetterQueue {
 public:
  class Builder {
   public:
    Builder& topic(connector::TopicDestination topic) {
      topic_ = std::move(topic);
      return *this;
    }
    Builder& service_account_key_file(std::string path) {
      note(client_.set_service_account_key_file(std::move(path)));
      return *this;
    }
    Builder& emulator_endpoint(std::string_view host_port) {
      note(client_.set_emulator_endpoint(host_port));
      return *this;
    }
    // [1000]; 0: synchronous; -1: until flush.
    Builder& max_in_flight_messages(int n) {
      max_in_flight_ = n;
      return *this;
    }
    Builder& flush_timeout(std::chrono::milliseconds t) {
      flush_timeout_ = t;
      return *this;
    }
    Builder& shutdown_timeout(std::chrono::milliseconds t) {
      shutdown_timeout_ = t;
      return *this;
    }
    // Test seam.
    Builder& publisher_factory(std::shared_ptr<PublisherFactory> factory) {
      factory_ = std::move(factory);
      return *this;
    }
    absl::StatusOr<std::shared_ptr<PubSubDeadLetterQueue>> build() const;

   private:
    friend class PubSubDeadLetterQueue;
    void note(absl::Status s) {
      if (error_.ok() && !s.ok()) error_ = std::move(s);
    }
    std::optional<connector::TopicDestination> topic_;
    connector::ClientOptions client_;
    int max_in_flight_ = 1000;
    std::chrono::milliseconds flush_timeout_{std::chrono::seconds(60)};
    std::chrono::milliseconds shutdown_timeout_{std::chrono::seconds(30)};
    std::shared_ptr<PublisherFactory> factory_;
    absl::Status error_;
  };
  static Builder builder() { return Builder(); }

  absl::Status open(const connector::DeadLetterQueueContext& context) override;
  absl::Status offer(const connector::FailedElement& element) override;
  absl::Status flush() override;
  absl::Status close() override;

  // The message a failed element becomes (exposed for tests): the payload as data, where it
  // failed and why as gcpstream.* attributes (the error cut at 1 KiB). A payload over
  // kMaxDeadLetterPayloadBytes is left out, and gcpstream.payload_omitted_bytes gives its size,
  // so that the dead letter always fits in Pub/Sub's 10 MB publish request.
  static google::pubsub::v1::PubsubMessage ToMessage(const connector::FailedElement& element);
  static constexpr std::size_t kMaxDeadLetterPayloadBytes = 9'900'000;

 private:
  class Listener;
  explicit PubSubDeadLetterQueue(Builder b) : b_(std::move(b)) {}
  absl::Status await_all(const char* wait);
  void on_outcome(const PublishOutcome& outcome);

  Builder b_;
  connector::DeadLetterQueueContext context_;
  std::shared_ptr<Publisher> publisher_;
  std::atomic<std::int64_t> in_flight_{0};
  std::atomic<std::int64_t> last_wait_ms_{0};
  std::atomic<std::int64_t> longest_wait_ms_{0};
  Counter* published_ = nullptr;
  absl::Status failure_;
  std::uint64_t next_token_ = 0;
  std::shared_ptr<Listener> listener_;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SINK_PUBSUB_DEAD_LETTER_QUEUE_H_
