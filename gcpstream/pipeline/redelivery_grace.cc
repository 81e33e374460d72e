#include "gcpstream/pipeline/redelivery_grace.h"

#include <algorithm>
#include <variant>

namespace gcpstream::pipeline {

std::chrono::milliseconds RedeliveryGraceAfterCrash(const PipelineSpec& spec) {
  const auto* pubsub = std::get_if<PubSubSourceSpec>(&spec.source);
  if (pubsub == nullptr) return std::chrono::milliseconds(0);
  const auto& o = pubsub->subscriber_options;
  std::chrono::milliseconds lease = std::chrono::seconds(600);
  if (o.max_duration_per_ack_extension) {
    lease = std::max<std::chrono::milliseconds>(
        *o.max_duration_per_ack_extension,
        o.min_duration_per_ack_extension.value_or(std::chrono::seconds(0)));
  }
  if (o.max_ack_extension_period && o.max_ack_extension_period->count() > 0) {
    lease = std::min(lease, *o.max_ack_extension_period);
  }
  return lease;
}

}  // namespace gcpstream::pipeline
