#include "gcpstream/pubsub/source/pubsub_subscriber_options.h"

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
