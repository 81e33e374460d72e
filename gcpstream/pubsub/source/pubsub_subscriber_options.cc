#include "gcpstream/pubsub/source/pubsub_subscriber_options.h"

#include <fmt/format.h>

namespace gcpstream::pubsub {

std::int64_t PubSubSubscriberOptions::effective_max_outstanding_messages() const {
  return flow_control_max_outstanding_element_count.value_or(
      SubscriberSettings{}.max_outstanding_messages);
}
std::int64_t PubSubSubscriberOptions::effective_max_outstanding_bytes() const {
  return flow_control_max_outstanding_request_bytes.value_or(
      SubscriberSettings{}.max_outstanding_bytes);
}
std::int64_t PubSubSubscriberOptions::effective_paused_split_max_messages() const {
  return paused_split_buffer_max_messages.value_or(2 * effective_max_outstanding_messages());
}
std::int64_t PubSubSubscriberOptions::effective_paused_split_max_bytes() const {
  return paused_split_buffer_max_bytes.value_or(2 * effective_max_outstanding_bytes());
}

SubscriberSettings PubSubSubscriberOptions::to_subscriber_settings() const {
  SubscriberSettings s;
  s.max_outstanding_messages = effective_max_outstanding_messages();
  s.max_outstanding_bytes = effective_max_outstanding_bytes();
  if (parallel_pull_count) s.parallel_pull_count = *parallel_pull_count;
  if (max_ack_extension_period) s.max_ack_extension_period = *max_ack_extension_period;
  s.min_duration_per_ack_extension = min_duration_per_ack_extension;
  s.max_duration_per_ack_extension = max_duration_per_ack_extension;
  return s;
}

absl::Status PubSubSubscriberOptions::validate() const {
  if (absl::Status s = to_subscriber_settings().validate(); !s.ok()) return s;
  if (effective_paused_split_max_messages() < 1 || effective_paused_split_max_bytes() < 1) {
    return absl::InvalidArgumentError(
        "paused_split_buffer_max_messages and paused_split_buffer_max_bytes must be at least 1");
  }
  if (await_ack_confirmation && await_ack_confirmation->count() <= 0) {
    return absl::InvalidArgumentError("await_ack_confirmation must be positive");
  }
  if (shutdown_timeout.count() < 0) {
    return absl::InvalidArgumentError("shutdown_timeout must not be negative");
  }
  if (max_records_per_fetch < 1) {
    return absl::InvalidArgumentError("max_records_per_fetch must be at least 1");
  }
  if (first_checkpoint_timeout.count() < 0) {
    return absl::InvalidArgumentError("first_checkpoint_timeout must not be negative");
  }
  if (subscriber_buffer_max_messages < 1 || subscriber_buffer_max_bytes < 1) {
    return absl::InvalidArgumentError(
        "subscriber_buffer_max_messages and subscriber_buffer_max_bytes must be at least 1");
  }
  return absl::OkStatus();
}

}  // namespace gcpstream::pubsub

namespace gcpstream::pubsub {

std::vector<std::string> PubSubSubscriberOptions::warnings_at(
    std::chrono::milliseconds interval) const {
  std::vector<std::string> out;
  if (interval.count() <= 0) return out;
  const SubscriberSettings settings = to_subscriber_settings();
  // A message received just after a checkpoint is acknowledged when the next one completes:
  // up to two intervals (trigger plus completion) after receipt.
  if (settings.max_ack_extension_period.count() > 0 &&
      2 * interval > settings.max_ack_extension_period) {
    out.push_back(fmt::format(
        "max_ack_extension_period ({} ms) is less than twice the checkpoint interval ({} ms): "
        "messages may be redelivered before the checkpoint that would acknowledge them "
        "completes; raise max_ack_extension_period or checkpoint more often",
        settings.max_ack_extension_period.count(), interval.count()));
  }
  // A split holds at most the flow-control limit until a checkpoint releases it, so it reads at
  // most that many messages per interval. One StreamingPull stream carries about 10 MB/s (about
  // 10,000 messages/s of 1 KB): a cap below that throttles the split, not the service.
  const double seconds = static_cast<double>(interval.count()) / 1000.0;
  const double per_second = static_cast<double>(effective_max_outstanding_messages()) / seconds;
  constexpr double kStreamMessagesPerSecond = 10'000;
  if (per_second < kStreamMessagesPerSecond) {
    out.push_back(fmt::format(
        "at a {} ms checkpoint interval and flow_control_max_outstanding_element_count {}, a "
        "split can read at most {:.0f} messages/s (a stream carries about {:.0f}); raise "
        "flow_control_max_outstanding_element_count (and the request bytes) to read faster",
        interval.count(), effective_max_outstanding_messages(), per_second,
        kStreamMessagesPerSecond));
  }
  return out;
}

}  // namespace gcpstream::pubsub
