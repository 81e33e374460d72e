#ifndef GCPSTREAM_PUBSUB_ADMIN_TOPIC_ADMIN_H_
#define GCPSTREAM_PUBSUB_ADMIN_TOPIC_ADMIN_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/connector/destinations.h"
#include "google/pubsub/v1/pubsub.grpc.pb.h"

namespace gcpstream::pubsub {

// Settings for topics the sink creates. Creation only: an existing topic keeps its own settings.
// Every field unset leaves Pub/Sub's own default.
struct TopicCreateOptions {
  // Topic-level retention (acknowledged or not): what lets a later subscription or a backwards
  // seek reach messages published before it existed.
  std::optional<std::chrono::seconds> message_retention;
  // Customer-managed encryption key (projects/p/locations/l/keyRings/r/cryptoKeys/k).
  std::optional<std::string> kms_key_name;
  // Message storage policy: where messages may be persisted...
  std::vector<std::string> allowed_persistence_regions;
  // ...and whether publishes travelling outside those regions are rejected too (needs regions).
  bool enforce_in_transit = false;

  // INVALID_ARGUMENT naming the option (enforce_in_transit without regions; retention outside
  // Pub/Sub's 10 minutes .. 31 days).
  absl::Status validate() const;
  // The Topic to create.
  google::pubsub::v1::Topic to_proto(const connector::TopicDestination& topic) const;
};

// Topic administration the sink needs. Asynchronous: callbacks run on a gRPC thread.
class TopicAdmin {
 public:
  virtual ~TopicAdmin() = default;
  // Creates the topic; `done` gets true when created, false when it already existed
  // (ALREADY_EXISTS is success: writers racing to create the same topic need no coordination).
  virtual void async_create_topic(const connector::TopicDestination& topic,
                                  const TopicCreateOptions& options,
                                  std::function<void(absl::StatusOr<bool>)> done) = 0;
  virtual void async_get_topic(
      const connector::TopicDestination& topic,
      std::function<void(absl::StatusOr<google::pubsub::v1::Topic>)> done) = 0;
};

// Over the Publisher service's admin RPCs; each call has `timeout`.
std::shared_ptr<TopicAdmin> MakeGrpcTopicAdmin(std::shared_ptr<grpc::Channel> channel,
                                               std::chrono::milliseconds timeout =
                                                   std::chrono::seconds(60));

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_ADMIN_TOPIC_ADMIN_H_
