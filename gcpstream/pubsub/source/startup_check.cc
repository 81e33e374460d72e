#include "gcpstream/pubsub/source/startup_check.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::pubsub {
namespace {

constexpr std::int64_t kDefaultRetentionMs = 7LL * 24 * 3600 * 1000;  // Pub/Sub's default

absl::Status Annotate(const absl::Status& s, const std::string& what) {
  return absl::Status(s.code(), fmt::format("{}: {}", what, s.message()));
}

absl::Status Check(const google::pubsub::v1::Subscription& sub, const PubSubSourceConfig& config) {
  if (config.ordering_mode == OrderingMode::kPerKey && !sub.enable_message_ordering()) {
    return absl::FailedPreconditionError(fmt::format(
        "subscription {} does not have message ordering enabled, but ordering_mode is PER_KEY: "
        "ordering is fixed when a subscription is created, so create an ordered one (or use "
        "ordering_mode NONE)",
        sub.name()));
  }
  if (sub.enable_exactly_once_delivery()) {
    return absl::FailedPreconditionError(fmt::format(
        "subscription {} has exactly-once delivery enabled, which this source cannot consume: "
        "its acknowledgement ids expire with the acknowledgement deadline, while the source "
        "holds them for a whole checkpoint interval",
        sub.name()));
  }
  if (config.deserialization_failure_policy == DeserializationFailurePolicy::kNack &&
      !sub.has_dead_letter_policy()) {
    return absl::FailedPreconditionError(fmt::format(
        "subscription {} has no dead-letter policy, which deserialization_failure_policy NACK "
        "needs: a message that never deserializes would be redelivered forever",
        sub.name()));
  }
  return absl::OkStatus();
}

std::int64_t DurationMs(const google::protobuf::Duration& d) {
  return d.seconds() * 1000 + d.nanos() / 1000000;
}

}  // namespace

absl::StatusOr<StartupCheckResult> RunStartupCheck(SubscriptionAdmin& admin,
                                                   const PubSubSourceConfig& config,
                                                   bool seek_already_done, std::int64_t now_ms) {
  StartupCheckResult result;
  std::vector<google::pubsub::v1::Subscription> described(config.subscriptions.size());
  std::vector<std::size_t> missing;
  for (std::size_t i = 0; i < config.subscriptions.size(); ++i) {
    const auto& spec = config.subscriptions[i];
    const auto name = spec.subscription.resource_name();
    auto sub = admin.get_subscription(spec.subscription);
    if (sub.ok()) {
      described[i] = *std::move(sub);
    } else if (sub.status().code() == absl::StatusCode::kNotFound) {
      if (!spec.create) {
        return absl::NotFoundError(
            fmt::format("subscription {} does not exist; to let the source create it, pass its "
                        "SubscriptionCreateOptions (with the topic to bind) to subscription(...)",
                        name));
      }
      missing.push_back(i);
    } else {
      return Annotate(sub.status(), fmt::format("describing subscription {}", name));
    }
  }
  // Reject what exists before creating anything.
  for (std::size_t i = 0; i < described.size(); ++i) {
    if (std::find(missing.begin(), missing.end(), i) != missing.end()) continue;
    if (absl::Status s = Check(described[i], config); !s.ok()) return s;
  }
  for (std::size_t i : missing) {
    const auto& spec = config.subscriptions[i];
    const auto name = spec.subscription.resource_name();
    auto created = admin.create_subscription(spec.subscription, *spec.create);
    if (!created.ok()) {
      return Annotate(created.status(), fmt::format("creating subscription {}", name));
    }
    if (*created) {
      result.created.push_back(name);
      spdlog::info("pubsub source: created subscription {} on {}", name,
                   spec.create->topic.resource_name());
    }
    auto sub = admin.get_subscription(spec.subscription);
    if (!sub.ok()) {
      return Annotate(sub.status(), fmt::format("describing created subscription {}", name));
    }
    if (absl::Status s = Check(*sub, config); !s.ok()) return s;
    described[i] = *std::move(sub);
  }
  const auto kind = config.start_position.kind;
  if (kind == StartPosition::Kind::kContinue || seek_already_done) return result;
  for (std::size_t i = 0; i < described.size(); ++i) {
    const auto& sub = described[i];
    const auto& dest = config.subscriptions[i].subscription;
    std::int64_t target = now_ms;
    if (kind == StartPosition::Kind::kFromTimestamp) {
      target = config.start_position.timestamp_ms;
    } else if (kind == StartPosition::Kind::kEarliestRetained) {
      std::int64_t retention = kDefaultRetentionMs;
      if (sub.has_message_retention_duration()) {
        retention = DurationMs(sub.message_retention_duration());
      }
      if (sub.has_topic_message_retention_duration()) {
        retention = std::max(retention, DurationMs(sub.topic_message_retention_duration()));
      }
      target = now_ms - retention;
    }
    const bool backwards = kind != StartPosition::Kind::kLatest && target < now_ms;
    if (backwards && !sub.retain_acked_messages() && !sub.has_topic_message_retention_duration()) {
      std::string warning = fmt::format(
          "subscription {}: start position {} seeks backwards, but the subscription neither "
          "retains acknowledged messages nor has topic retention, so only messages never "
          "acknowledged are replayed",
          sub.name(), config.start_position.describe());
      spdlog::warn("pubsub source: {}", warning);
      result.warnings.push_back(std::move(warning));
    }
    if (absl::Status s = admin.seek_to_time(dest, target); !s.ok()) {
      return Annotate(s, fmt::format("seeking subscription {} to {}", sub.name(),
                                     config.start_position.describe()));
    }
    spdlog::info("pubsub source: sought {} to {} ({} ms)", sub.name(),
                 config.start_position.describe(), target);
  }
  result.seeked = true;
  return result;
}

}  // namespace gcpstream::pubsub
