#ifndef GCPSTREAM_PUBSUB_CLIENT_PUBLISHER_H_
#define GCPSTREAM_PUBSUB_CLIENT_PUBLISHER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/connector/destinations.h"
#include "google/pubsub/v1/pubsub.pb.h"

namespace gcpstream::pubsub {

// How one publish ended: the caller's token and the service-assigned message id, or why it
// failed — and then the message itself, handed back so the caller can republish or route it.
struct PublishOutcome {
  std::uint64_t token = 0;
  absl::StatusOr<std::string> message_id;
  std::optional<google::pubsub::v1::PubsubMessage> message;  // set when the publish failed
};

// The messages of a request that was published, handed back to the listener so that the
// thread that built them can free them: with glibc's malloc a free on another thread (gRPC's)
// contends for the allocating thread's arena, which cost the publish benchmark about a quarter
// of its CPU (docs/performance.md).
using RetiredMessages = google::protobuf::RepeatedPtrField<google::pubsub::v1::PubsubMessage>;

// Receives publish outcomes, a whole batch at a time, on arbitrary threads (gRPC's, the
// timer's, or the caller's when a publish fails at once), never while the publisher holds its
// lock. Must be thread-safe and cheap (typically: queue them and wake the owner). `retired`
// holds the messages published successfully (possibly empty); a listener that does not care
// where they are freed simply lets it go.
class PublishListener {
 public:
  virtual ~PublishListener() = default;
  virtual void on_published(std::vector<PublishOutcome> outcomes, RetiredMessages retired) = 0;
};

// Publishes messages to one topic. The sink writer talks to this interface (so its tests use a
// fake that completes nothing on its own); BatchingPublisher is the real one. A message moves
// into the publisher (and into the request: it is not copied) and comes back in the outcome
// only when its publish failed.
class Publisher {
 public:
  using Message = google::pubsub::v1::PubsubMessage;
  virtual ~Publisher() = default;

  // Accepts a message into a batch; its outcome reaches the listener with `token`. With ordering
  // enabled, messages with the same ordering key are sent in publish order, one batch at a
  // time; a key whose publish failed terminally is paused: its queued messages fail with an
  // "ordering key paused" status (see IsOrderingKeyPaused) and new ones fail at once until
  // resume_publish(key).
  virtual void publish(Message&& message, std::uint64_t token) = 0;
  // The same, but the message travels alone in its own request (after anything batched before
  // it for the same key): the service's answer then concerns this message only.
  virtual void publish_solo(Message&& message, std::uint64_t token) = 0;
  // Sends everything batched now, whatever the thresholds.
  virtual void flush() = 0;
  virtual void resume_publish(const std::string& ordering_key) = 0;
  // Stops: what is still batched or waiting to be retried fails with CANCELLED, requests in
  // flight are cancelled, and the call returns once every outcome was delivered. Blocking (run
  // it through BoundedShutdown).
  virtual absl::Status shutdown() = 0;
};

// Creates publishers, one per topic, reporting to `listener`.
class PublisherFactory {
 public:
  virtual ~PublisherFactory() = default;
  virtual absl::StatusOr<std::shared_ptr<Publisher>> create(
      const connector::TopicDestination& topic, std::shared_ptr<PublishListener> listener) = 0;
};

// The status queued messages of a paused ordering key fail with: not a root cause of its own.
absl::Status OrderingKeyPausedError(const std::string& ordering_key);
bool IsOrderingKeyPaused(const absl::Status& status);

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_CLIENT_PUBLISHER_H_
