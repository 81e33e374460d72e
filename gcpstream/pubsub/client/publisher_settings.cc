#include "gcpstream/pubsub/client/publisher_settings.h"

namespace gcpstream::pubsub {

absl::Status BatchingSettings::validate() const {
  if (element_count_threshold < 1 || element_count_threshold > 1000) {
    return absl::InvalidArgumentError(
        "batch_element_count_threshold must be in 1..1000 (Pub/Sub accepts at most 1000 "
        "messages per publish request)");
  }
  if (request_byte_threshold < 1 || request_byte_threshold > 10'000'000) {
    return absl::InvalidArgumentError(
        "batch_request_byte_threshold must be in 1..10,000,000 (Pub/Sub's request size limit "
        "is 10 MB)");
  }
  if (delay_threshold.count() < 0) {
    return absl::InvalidArgumentError("batch_delay_threshold must not be negative");
  }
  return absl::OkStatus();
}

absl::Status RetrySettings::validate() const {
  if (total_timeout.count() < 0) {
    return absl::InvalidArgumentError("retry_total_timeout must not be negative");
  }
  if (initial_retry_delay.count() < 0 || max_retry_delay.count() < 0) {
    return absl::InvalidArgumentError("retry delays must not be negative");
  }
  if (retry_delay_multiplier < 1.0) {
    return absl::InvalidArgumentError("retry_delay_multiplier must be >= 1.0");
  }
  if (initial_rpc_timeout.count() < 0 || max_rpc_timeout.count() < 0) {
    return absl::InvalidArgumentError("retry RPC timeouts must not be negative");
  }
  if (rpc_timeout_multiplier < 1.0) {
    return absl::InvalidArgumentError("retry_rpc_timeout_multiplier must be >= 1.0");
  }
  if (max_attempts < 0) return absl::InvalidArgumentError("retry_max_attempts must be >= 0");
  return absl::OkStatus();
}

}  // namespace gcpstream::pubsub
