#ifndef GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SUBSCRIBER_OPTIONS_H_
#define GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SUBSCRIBER_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gcpstream/pubsub/client/subscriber.h"

namespace gcpstream::pubsub {

// Tuning of the source's subscribers and readers. Every optional field left unset keeps the
// client library's default (named beside it); the rest are the source's own. See
// docs/pubsub.md ("Source") for why each default is what it is and the sizing rule.
struct PubSubSubscriberOptions {
  // Messages / bytes one subscriber (one split) holds before it stops pulling, while it is
  // extending their leases. Google's clients: 1,000 messages, 100 MB. Because acknowledgement
  // waits for a checkpoint, size the count at least peak messages/s x checkpoint interval.
  std::optional<std::int64_t> flow_control_max_outstanding_element_count;
  std::optional<std::int64_t> flow_control_max_outstanding_request_bytes;
  // What a split paused by watermark alignment may buffer before its subscriber is stopped
  // ("parked") and reopened on resume. Default: twice the effective flow-control limits.
  std::optional<std::int64_t> paused_split_buffer_max_messages;
  std::optional<std::int64_t> paused_split_buffer_max_bytes;
  // Streaming-pull connections per subscriber (Google's default 1; one carries ~10 MB/s).
  // Rejected under OrderingMode::kPerKey.
  std::optional<int> parallel_pull_count;
  // How long leases are extended, from receipt (Google's default 1 h; 0 disables extension).
  // Keep it comfortably above the checkpoint interval.
  std::optional<std::chrono::milliseconds> max_ack_extension_period;
  std::optional<std::chrono::seconds> min_duration_per_ack_extension;  // default adaptive
  std::optional<std::chrono::seconds> max_duration_per_ack_extension;  // default adaptive
  // When set, checkpoint completion waits (on the task thread) for the service to confirm
  // every acknowledgement and fails the job after this long. Unset: fire-and-forget.
  std::optional<std::chrono::milliseconds> await_ack_confirmation;
  // Bounds a reader's whole close: every split's messages are nacked and every subscriber asked
  // to stop before any is waited on. Keep it under the runtime's reader close budget.
  std::chrono::milliseconds shutdown_timeout{std::chrono::seconds(5)};
  // How many messages one fetch takes from one split. Not a memory bound.
  int max_records_per_fetch = 1000;
  // A reader holding unacknowledged messages fails the job when no checkpoint has been taken
  // this long after its first split assignment. 0 disables the check.
  std::chrono::milliseconds first_checkpoint_timeout{std::chrono::minutes(10)};
  // The reader-wide hard budget over every split's subscriber buffer: the delivery that would
  // cross either is nacked before it is retained.
  std::int64_t subscriber_buffer_max_messages = 10000;
  std::int64_t subscriber_buffer_max_bytes = 64LL * 1024 * 1024;

  // Effective values (the defaults resolved).
  std::int64_t effective_max_outstanding_messages() const;
  std::int64_t effective_max_outstanding_bytes() const;
  std::int64_t effective_paused_split_max_messages() const;
  std::int64_t effective_paused_split_max_bytes() const;
  SubscriberSettings to_subscriber_settings() const;

  // INVALID_ARGUMENT naming the option.
  absl::Status validate() const;
  // What these settings mean at a checkpoint interval (0: checkpointing off), as sentences to
  // log at start: acknowledgement waits for a checkpoint, so a lease must outlive two intervals,
  // and one split holds at most the flow-control limit per interval.
  std::vector<std::string> warnings_at(std::chrono::milliseconds checkpoint_interval) const;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SUBSCRIBER_OPTIONS_H_
