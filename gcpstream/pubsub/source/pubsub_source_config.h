#ifndef GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SOURCE_CONFIG_H_
#define GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SOURCE_CONFIG_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/connector/client_options.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/pubsub/admin/subscription_admin.h"
#include "gcpstream/pubsub/client/subscriber_stub.h"
#include "gcpstream/pubsub/source/pubsub_subscriber_options.h"

namespace gcpstream::pubsub {

// NONE: no ordering, one split per subtask at least. PER_KEY: in-order emission per ordering
// key per subscription: one split (one subscriber, one stream) per subscription.
enum class OrderingMode { kNone, kPerKey };

// What happens to a message the deserializer rejects (it is counted in numRecordsInErrors
// whichever is chosen): FAIL the job, DROP it (acknowledged with the next checkpoint), or NACK
// it for redelivery (needs a dead-letter policy on every subscription).
enum class DeserializationFailurePolicy { kFail, kDrop, kNack };

// Where the source starts. Anything but kContinue seeks every subscription once, at the job's
// first start (the enumerator's checkpointed state remembers it ran).
struct StartPosition {
  enum class Kind { kContinue, kEarliestRetained, kLatest, kFromTimestamp };
  Kind kind = Kind::kContinue;
  std::int64_t timestamp_ms = 0;  // kFromTimestamp only (ms since epoch)

  static StartPosition continue_from_subscription() { return {}; }
  static StartPosition earliest_retained() { return {Kind::kEarliestRetained, 0}; }
  static StartPosition latest() { return {Kind::kLatest, 0}; }
  static StartPosition from_timestamp(std::int64_t ms) { return {Kind::kFromTimestamp, ms}; }
  std::string describe() const;
};

// One configured subscription; `create` authorises creating it when missing.
struct SubscriptionSpec {
  connector::SubscriptionDestination subscription;
  std::optional<SubscriptionCreateOptions> create;
};

// Test seams: what the enumerator and the readers connect through.
struct PubSubSourceClients {
  std::function<absl::StatusOr<std::shared_ptr<SubscriptionAdmin>>()> admin_factory;
  std::function<absl::StatusOr<std::shared_ptr<SubscriberStub>>()> stub_factory;
};

// Everything a PubSubSource is configured with except the deserializer. Immutable once built.
struct PubSubSourceConfig {
  std::vector<SubscriptionSpec> subscriptions;
  OrderingMode ordering_mode = OrderingMode::kNone;
  PubSubSubscriberOptions subscriber_options;
  StartPosition start_position;
  DeserializationFailurePolicy deserialization_failure_policy = DeserializationFailurePolicy::kFail;
  connector::ClientOptions client_options;
  std::optional<PubSubSourceClients> clients;

  // The build-time checks: INVALID_ARGUMENT naming the options.
  absl::Status validate() const;
  // The gRPC clients for client_options (credentials are read here), or the test seams.
  absl::StatusOr<std::shared_ptr<SubscriptionAdmin>> make_admin() const;
  absl::StatusOr<std::shared_ptr<SubscriberStub>> make_stub() const;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SOURCE_CONFIG_H_
