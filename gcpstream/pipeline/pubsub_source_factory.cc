#include "gcpstream/pipeline/pubsub_source_factory.h"

#include <nlohmann/json.hpp>

#include "gcpstream/pipeline/record_json.h"
#include "gcpstream/pubsub/source/pubsub_source.h"

namespace gcpstream::pipeline {
namespace {

pubsub::PubSubSubscriberOptions SubscriberOptions(const PubSubSourceSpec::SubscriberOptions& in) {
  pubsub::PubSubSubscriberOptions out;
  out.flow_control_max_outstanding_element_count = in.flow_control_max_outstanding_element_count;
  out.flow_control_max_outstanding_request_bytes = in.flow_control_max_outstanding_request_bytes;
  out.max_ack_extension_period = in.max_ack_extension_period;
  out.min_duration_per_ack_extension = in.min_duration_per_ack_extension;
  out.max_duration_per_ack_extension = in.max_duration_per_ack_extension;
  out.parallel_pull_count = in.parallel_pull_count;
  if (in.shutdown_timeout) out.shutdown_timeout = *in.shutdown_timeout;
  if (in.subscriber_buffer_max_messages) {
    out.subscriber_buffer_max_messages = *in.subscriber_buffer_max_messages;
  }
  if (in.subscriber_buffer_max_bytes)
    out.subscriber_buffer_max_bytes = *in.subscriber_buffer_max_bytes;
  if (in.max_records_per_fetch) out.max_records_per_fetch = *in.max_records_per_fetch;
  if (in.first_checkpoint_timeout) out.first_checkpoint_timeout = *in.first_checkpoint_timeout;
  return out;
}

pubsub::SubscriptionCreateOptions CreateOptions(const PubSubSourceSpec::Subscription& sub) {
  const auto& in = *sub.create;
  pubsub::SubscriptionCreateOptions out;
  out.topic = connector::TopicDestination::of(in.topic_project.value_or(sub.project), in.topic);
  if (in.ack_deadline) {
    out.ack_deadline = std::chrono::duration_cast<std::chrono::seconds>(*in.ack_deadline);
  }
  out.enable_message_ordering = in.enable_message_ordering;
  out.retain_acked_messages = in.retain_acked_messages;
  if (in.message_retention) {
    out.message_retention = std::chrono::duration_cast<std::chrono::seconds>(*in.message_retention);
  }
  return out;
}

pubsub::StartPosition Start(const PubSubSourceSpec& spec) {
  switch (spec.start_position) {
    case PubSubSourceSpec::StartPosition::kDefault:
      return pubsub::StartPosition::continue_from_subscription();
    case PubSubSourceSpec::StartPosition::kEarliestRetained:
      return pubsub::StartPosition::earliest_retained();
    case PubSubSourceSpec::StartPosition::kLatest:
      return pubsub::StartPosition::latest();
    case PubSubSourceSpec::StartPosition::kFromTimestamp:
      return pubsub::StartPosition::from_timestamp(spec.start_timestamp_ms.value_or(0));
  }
  return {};
}

// The message's data parsed as a JSON object into fields (a non-object value lands under
// "value"), its attributes as attributes, its publish time as the event time. Data that is not
// JSON is a deserialization failure, handled by deserialization_failure_policy.
absl::Status ToRecord(const google::pubsub::v1::PubsubMessage& m, Collector<PipelineRecord>& out) {
  PipelineRecord record;
  auto parsed = ParseRecordJson(m.data());
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("message {} is not a JSON record ({} bytes of "
                    "data): {}",
                    m.message_id(), m.data().size(), parsed.status().message()));
  }
  if (parsed->is_object()) {
    record.fields = std::move(*parsed);
  } else {
    record.fields["value"] = std::move(*parsed);
  }
  for (const auto& [k, v] : m.attributes()) record.attributes.emplace(k, v);
  record.event_time_ms = m.publish_time().seconds() * 1000 + m.publish_time().nanos() / 1000000;
  out.collect(std::move(record));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PipelineSource> MakePubSubPipelineSource(const PubSubSourceSpec& spec) {
  auto builder = pubsub::PubSubSource<PipelineRecord>::builder();
  for (const auto& sub : spec.subscriptions) {
    auto dest = connector::SubscriptionDestination::of(sub.project, sub.subscription);
    if (sub.create) {
      builder.subscription(std::move(dest), CreateOptions(sub));
    } else {
      builder.subscription(std::move(dest));
    }
  }
  if (spec.emulator_endpoint) builder.emulator_endpoint(*spec.emulator_endpoint);
  if (spec.service_account_key_file)
    builder.service_account_key_file(*spec.service_account_key_file);
  builder.ordering_mode(spec.ordering_mode == PubSubSourceSpec::OrderingMode::kPerKey
                            ? pubsub::OrderingMode::kPerKey
                            : pubsub::OrderingMode::kNone);
  builder.start_position(Start(spec));
  switch (spec.deserialization_failure_policy) {
    case PubSubSourceSpec::DeserializationFailurePolicy::kFail:
      builder.deserialization_failure_policy(pubsub::DeserializationFailurePolicy::kFail);
      break;
    case PubSubSourceSpec::DeserializationFailurePolicy::kDrop:
      builder.deserialization_failure_policy(pubsub::DeserializationFailurePolicy::kDrop);
      break;
    case PubSubSourceSpec::DeserializationFailurePolicy::kNack:
      builder.deserialization_failure_policy(pubsub::DeserializationFailurePolicy::kNack);
      break;
  }
  builder.subscriber_options(SubscriberOptions(spec.subscriber_options));
  builder.deserializer(pubsub::PubSubDeserializationSchema<PipelineRecord>::of(ToRecord));
  auto source = builder.build();
  if (!source.ok()) return source.status();
  return PipelineSource::of(*std::move(source), "pubsub");
}

}  // namespace gcpstream::pipeline
