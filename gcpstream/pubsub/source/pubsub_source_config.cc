#include "gcpstream/pubsub/source/pubsub_source_config.h"

#include <fmt/format.h>

#include <set>

#include "gcpstream/pubsub/client/pubsub_target.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::pubsub {
std::string StartPosition::describe() const {
  switch (kind) {
    case Kind::kContinue:
      return "continue_from_subscription";
    case Kind::kEarliestRetained:
      return "earliest_retained";
    case Kind::kLatest:
      return "latest";
    case Kind::kFromTimestamp:
      return fmt::format("from_timestamp({} ms)", timestamp_ms);
  }
  return "?";
}

absl::Status PubSubSourceConfig::validate() const {
  if (subscriptions.empty()) {
    return absl::InvalidArgumentError(
        "PubSubSource needs at least one subscription: set subscription(...) or "
        "subscriptions(...)");
  }
  std::set<std::string> seen;
  for (const auto& spec : subscriptions) {
    const auto name = spec.subscription.resource_name();
    if (spec.subscription.project.empty() || spec.subscription.subscription.empty()) {
      return absl::InvalidArgumentError("subscription: project and subscription id are required");
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(fmt::format(
          "subscription {} is configured twice: every message would be emitted once per copy",
          name));
    }
    if (!spec.create) continue;
    if (absl::Status s = spec.create->validate(); !s.ok()) {
      return absl::InvalidArgumentError(fmt::format("subscription {}: {}", name, s.message()));
    }
    if (ordering_mode == OrderingMode::kPerKey &&
        !spec.create->enable_message_ordering.value_or(false)) {
      return absl::InvalidArgumentError(fmt::format(
          "subscription {}: ordering_mode PER_KEY needs enable_message_ordering in its "
          "SubscriptionCreateOptions (ordering is fixed when a subscription is created)",
          name));
    }
    if (deserialization_failure_policy == DeserializationFailurePolicy::kNack &&
        !spec.create->dead_letter_policy) {
      return absl::InvalidArgumentError(fmt::format(
          "subscription {}: deserialization_failure_policy NACK needs a dead_letter_policy in "
          "its SubscriptionCreateOptions (without one a bad message is redelivered forever)",
          name));
    }
  }
  if (ordering_mode == OrderingMode::kPerKey && subscriber_options.parallel_pull_count) {
    return absl::InvalidArgumentError(
        "parallel_pull_count cannot be combined with ordering_mode PER_KEY: per-key order "
        "holds only within one streaming-pull connection");
  }
  if (absl::Status s = subscriber_options.validate(); !s.ok()) return s;
  return client_options.validate();
}

absl::StatusOr<std::shared_ptr<SubscriptionAdmin>> PubSubSourceConfig::make_admin() const {
  if (clients && clients->admin_factory) return clients->admin_factory();
  // Subscription admin and subscriber calls are all blocking ones.
  auto channel = connector::CreateChannel(client_options, kPubSubTarget, {},
                                          connector::CallApi::kBlockingOnly);
  if (!channel.ok()) return channel.status();
  return MakeGrpcSubscriptionAdmin(*channel);
}

absl::StatusOr<std::shared_ptr<SubscriberStub>> PubSubSourceConfig::make_stub() const {
  if (clients && clients->stub_factory) return clients->stub_factory();
  grpc::ChannelArguments args;
  // Messages of up to 10 MB plus their envelope (gRPC's 4 MB default would cut a response).
  args.SetMaxReceiveMessageSize(-1);
  auto channel = connector::CreateChannel(client_options, kPubSubTarget, args,
                                          connector::CallApi::kBlockingOnly);
  if (!channel.ok()) return channel.status();
  return MakeGrpcSubscriberStub(*channel);
}

}  // namespace gcpstream::pubsub
