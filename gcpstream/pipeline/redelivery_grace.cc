#include "gcpstream/pipeline/redelivery_grace.h"

#include <algorithm>
#include <variant>

namespace gcpstream::pipeline {

std::chrono::milliseconds RedeliveryGraceAfterCrash(const PipelineSpec& spec) {
  const auto* pubsub = std::get_if<PubSubSourceSpec>(&spec.source);
  if (pubsub == nullptr) return std::chrono::milliseconds(0);
  const auto& o = pubsub->subscriber_options;
  // The subscriber clamps each extension (and the stream's ack deadline) to
  // [lo, max(lo, hi)]: lo = min_duration_per_ack_extension or 10 s, hi =
  // max_duration_per_ack_extension or 600 s. max_ack_extension_period does not shorten the
  // last extension, so it does not bound a lease either.
  const std::chrono::seconds lo =
      o.min_duration_per_ack_extension.value_or(std::chrono::seconds(10));
  const std::chrono::seconds hi =
      o.max_duration_per_ack_extension.value_or(std::chrono::seconds(600));
  std::chrono::milliseconds lease = std::max(lo, hi);
  // The subscription's own ack deadline, where the file sets it: the emulator holds a dead
  // stream's messages for that long rather than for the stream's deadline.
  for (const auto& sub : pubsub->subscriptions) {
    if (sub.create && sub.create->ack_deadline) lease = std::max(lease, *sub.create->ack_deadline);
  }
  return lease;
}

}  // namespace gcpstream::pipeline
