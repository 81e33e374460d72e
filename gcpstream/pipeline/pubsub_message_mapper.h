#ifndef GCPSTREAM_PIPELINE_PUBSUB_MESSAGE_MAPPER_H_
#define GCPSTREAM_PIPELINE_PUBSUB_MESSAGE_MAPPER_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/pipeline/pipeline_record.h"
#include "gcpstream/pipeline/pipeline_spec.h"
#include "gcpstream/pipeline/record_template.h"
#include "google/pubsub/v1/pubsub.pb.h"

namespace gcpstream::pipeline {

// Turns a record into one Pub/Sub message as `transform.to_pubsub` says: data = the record's
// fields as compact JSON (or one field's text), attributes = the record's own attributes
// (unless include_record_attributes is false) plus the configured ones (which win on a name
// clash), ordering key = its template's text. Without a `to_pubsub` section the defaults apply
// (JSON data, the record's attributes, no ordering key).
//
// Immutable; thread-safe.
class PubSubMessageMapper {
 public:
  static absl::StatusOr<PubSubMessageMapper> make(const PubSubMappingSpec& spec);
  // INVALID_ARGUMENT naming a missing field.
  absl::StatusOr<google::pubsub::v1::PubsubMessage> map(const PipelineRecord& record) const;

 private:
  PubSubMappingSpec spec_;
  std::vector<std::pair<std::string, RecordTemplate>> attributes_;
  std::optional<RecordTemplate> ordering_key_;
};

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_PUBSUB_MESSAGE_MAPPER_H_
