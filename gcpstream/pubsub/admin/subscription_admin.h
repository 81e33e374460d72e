#ifndef GCPSTREAM_PUBSUB_ADMIN_SUBSCRIPTION_ADMIN_H_
#define GCPSTREAM_PUBSUB_ADMIN_SUBSCRIPTION_ADMIN_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/connector/destinations.h"
#include "google/pubsub/v1/pubsub.grpc.pb.h"

namespace gcpstream::pubsub {

// A subscription's dead-letter policy: after `max_delivery_attempts` (5..100, Pub/Sub's
// range) deliveries the service forwards the message to `topic`.
struct DeadLetterPolicy {
  connector::TopicDestination topic;
  int max_delivery_attempts = 5;
};

// Settings for a subscription the source creates. Passing them is what authorises creation.
// Creation only: an existing subscription keeps its own settings (they are neither applied
// nor compared). Every optional field left unset keeps Pub/Sub's own default.
// There is deliberately no exactly-once-delivery field: the source refuses such subscriptions.
struct SubscriptionCreateOptions {
  connector::TopicDestination topic;                      // required
  std::optional<std::chrono::seconds> ack_deadline;       // Pub/Sub: 10 s (10..600)
  std::optional<bool> enable_message_ordering;            // Pub/Sub: off
  std::optional<std::chrono::seconds> message_retention;  // Pub/Sub: 7 days (10 min..7 d)
  std::optional<bool> retain_acked_messages;              // Pub/Sub: off
  std::optional<std::chrono::seconds> expiration_ttl;     // Pub/Sub: 31 days (>= 1 day)
  bool never_expire = false;                              // beats expiration_ttl
  std::optional<DeadLetterPolicy> dead_letter_policy;     // Pub/Sub: none
  std::optional<std::string> filter;                      // Pub/Sub: deliver everything

  // INVALID_ARGUMENT naming the option (missing topic, values outside Pub/Sub's ranges,
  // expiration_ttl beside never_expire).
  absl::Status validate() const;
  google::pubsub::v1::Subscription to_proto(
      const connector::SubscriptionDestination& subscription) const;
};

// The subscription calls the source's enumerator makes. Blocking (the enumerator runs them on
// a worker thread, never on the coordinator thread); each call has the admin's timeout.
// Errors keep the gRPC code (NOT_FOUND for a missing subscription, PERMISSION_DENIED, ...).
class SubscriptionAdmin {
 public:
  virtual ~SubscriptionAdmin() = default;
  virtual absl::StatusOr<google::pubsub::v1::Subscription> get_subscription(
      const connector::SubscriptionDestination& subscription) = 0;
  // True when created, false when it already existed (ALREADY_EXISTS is success).
  virtual absl::StatusOr<bool> create_subscription(
      const connector::SubscriptionDestination& subscription,
      const SubscriptionCreateOptions& options) = 0;
  // Seek to a publish time (ms since epoch): messages published before it count as
  // acknowledged, later ones (still retained) as not.
  virtual absl::Status seek_to_time(const connector::SubscriptionDestination& subscription,
                                    std::int64_t time_ms) = 0;
  // Seek to a snapshot ("projects/p/snapshots/s").
  virtual absl::Status seek_to_snapshot(const connector::SubscriptionDestination& subscription,
                                        const std::string& snapshot) = 0;
};

// Over gRPC, with blocking calls only (its channel: connector::CallApi::kBlockingOnly).
std::shared_ptr<SubscriptionAdmin> MakeGrpcSubscriptionAdmin(
    std::shared_ptr<grpc::Channel> channel,
    std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_ADMIN_SUBSCRIPTION_ADMIN_H_
