#include "gcpstream/pubsub/sink/pubsub_publisher_options.h"

namespace gcpstream::pubsub {

absl::Status PubSubPublisherOptions::validate() const {
  if (enable_message_ordering && (retry_total_timeout || retry_max_attempts)) {
    return absl::InvalidArgumentError(
        "retry_total_timeout and retry_max_attempts cannot be set with "
        "enable_message_ordering(true): an ordered publisher retries without limit, so neither "
        "would bound anything (set them only on the unordered branch)");
  }
  if (absl::Status s = publisher_settings().batching.validate(); !s.ok()) return s;
  if (absl::Status s = publisher_settings().retry.validate(); !s.ok()) return s;
  if (max_in_flight_messages < 1) {
    return absl::InvalidArgumentError("max_in_flight_messages must be >= 1");
  }
  if (max_in_flight_bytes < 1)
    return absl::InvalidArgumentError("max_in_flight_bytes must be >= 1");
  if (max_active_publishers < 1) {
    return absl::InvalidArgumentError("max_active_publishers must be >= 1");
  }
  if (destination_idle_timeout.count() <= 0) {
    return absl::InvalidArgumentError("destination_idle_timeout must be positive");
  }
  if (shutdown_timeout.count() <= 0) {
    return absl::InvalidArgumentError("shutdown_timeout must be positive");
  }
  if (publish_progress_timeout.count() <= 0) {
    return absl::InvalidArgumentError("publish_progress_timeout must be positive");
  }
  if (max_consecutive_rejections < -1 || max_consecutive_rejections == 0) {
    return absl::InvalidArgumentError(
        "max_consecutive_rejections must be >= 1, or -1 to remove the bound");
  }
  return recovery.validate();
}

PublisherSettings PubSubPublisherOptions::publisher_settings() const {
  PublisherSettings s;
  s.batching.element_count_threshold = batch_element_count_threshold;
  s.batching.request_byte_threshold = batch_request_byte_threshold;
  s.batching.delay_threshold = batch_delay_threshold;
  if (retry_total_timeout) s.retry.total_timeout = *retry_total_timeout;
  if (retry_max_attempts) s.retry.max_attempts = *retry_max_attempts;
  s.retry.initial_retry_delay = retry_initial_delay;
  s.retry.retry_delay_multiplier = retry_delay_multiplier;
  s.retry.max_retry_delay = retry_max_delay;
  s.retry.initial_rpc_timeout = retry_initial_rpc_timeout;
  s.retry.rpc_timeout_multiplier = retry_rpc_timeout_multiplier;
  s.retry.max_rpc_timeout = retry_max_rpc_timeout;
  s.retry.unbounded = enable_message_ordering;
  s.enable_message_ordering = enable_message_ordering;
  return s;
}

}  // namespace gcpstream::pubsub
