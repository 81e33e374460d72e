#ifndef GCPSTREAM_PIPELINE_PUBSUB_SOURCE_SPEC_H_
#define GCPSTREAM_PIPELINE_PUBSUB_SOURCE_SPEC_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gcpstream::pipeline {

// `source: {type: pubsub}` as parsed from YAML: plain data, no validation beyond types and
// allowed values (the source's builder validates combinations). Unset optionals mean "the
// source's own default" (docs/pubsub.md); the YAML key of each field is its name.
struct PubSubSourceSpec {
  // `create:` of one subscription: present = the source may create the subscription.
  struct SubscriptionCreate {
    std::string topic;                                      // required
    std::optional<std::string> topic_project;               // unset: the subscription's project
    std::optional<std::chrono::milliseconds> ack_deadline;  // Pub/Sub: 10 s
    std::optional<bool> enable_message_ordering;            // Pub/Sub: off
    std::optional<bool> retain_acked_messages;              // Pub/Sub: off
    std::optional<std::chrono::milliseconds> message_retention;  // Pub/Sub: 7 days
  };
  struct Subscription {
    std::string project;
    std::string subscription;
    std::optional<SubscriptionCreate> create;
  };
  enum class OrderingMode { kNone, kPerKey };
  enum class StartPosition { kDefault, kEarliestRetained, kLatest, kFromTimestamp };
  enum class DeserializationFailurePolicy { kFail, kDrop, kNack };

  // `subscriber_options:` (unset: the source's defaults).
  struct SubscriberOptions {
    std::optional<std::int64_t> flow_control_max_outstanding_element_count;  // 1000
    std::optional<std::int64_t> flow_control_max_outstanding_request_bytes;  // 100 MB
    std::optional<std::chrono::milliseconds> max_ack_extension_period;       // 1 h
    // Bounds on one lease extension (whole seconds, 1 s..600 s); unset: adaptive 10 s..600 s.
    std::optional<std::chrono::seconds> min_duration_per_ack_extension;
    std::optional<std::chrono::seconds> max_duration_per_ack_extension;
    std::optional<int> parallel_pull_count;                     // 1
    std::optional<std::chrono::milliseconds> shutdown_timeout;  // 5 s
    std::optional<std::int64_t> subscriber_buffer_max_messages;
    std::optional<std::int64_t> subscriber_buffer_max_bytes;
    std::optional<int> max_records_per_fetch;                           // 1000
    std::optional<std::chrono::milliseconds> first_checkpoint_timeout;  // 10 min
  };

  std::vector<Subscription> subscriptions;  // at least one
  std::optional<std::string> emulator_endpoint;
  std::optional<std::string> service_account_key_file;
  OrderingMode ordering_mode = OrderingMode::kNone;
  StartPosition start_position = StartPosition::kDefault;
  // from_timestamp only: ms since the Unix epoch (YAML `start_timestamp`, RFC 3339 or ms).
  std::optional<std::int64_t> start_timestamp_ms;
  DeserializationFailurePolicy deserialization_failure_policy = DeserializationFailurePolicy::kFail;
  SubscriberOptions subscriber_options;
};

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_PUBSUB_SOURCE_SPEC_H_
