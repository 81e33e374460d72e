#ifndef GCPSTREAM_PIPELINE_PUBSUB_SOURCE_FACTORY_H_
#define GCPSTREAM_PIPELINE_PUBSUB_SOURCE_FACTORY_H_

#include "absl/status/statusor.h"
#include "gcpstream/pipeline/pipeline_source.h"
#include "gcpstream/pipeline/pubsub_source_spec.h"

namespace gcpstream::pipeline {

// The Pub/Sub StreamingPull source of a `source: {type: pubsub}` section. Each message becomes
// one PipelineRecord: the payload parsed as a JSON object into `fields`, the message
// attributes into `attributes`, and the publish time as `event_time_ms`.
//
// Builds configuration only (no RPC). INVALID_ARGUMENT naming the option for a combination the
// source's builder refuses.
absl::StatusOr<PipelineSource> MakePubSubPipelineSource(const PubSubSourceSpec& spec);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_PUBSUB_SOURCE_FACTORY_H_
