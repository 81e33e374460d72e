#include "gcpstream/pipeline/pubsub_message_mapper.h"

#include <fmt/format.h>

#include "gcpstream/api/status_macros.h"

namespace gcpstream::pipeline {

absl::StatusOr<PubSubMessageMapper> PubSubMessageMapper::make(const PubSubMappingSpec& spec) {
  PubSubMessageMapper m;
  m.spec_ = spec;
  for (const auto& [name, text] : spec.attributes) {
    GCP_ASSIGN_OR_RETURN(RecordTemplate t, RecordTemplate::parse(text));
    m.attributes_.emplace_back(name, std::move(t));
  }
  if (spec.ordering_key) {
    GCP_ASSIGN_OR_RETURN(m.ordering_key_, RecordTemplate::parse(*spec.ordering_key));
  }
  return m;
}

absl::StatusOr<google::pubsub::v1::PubsubMessage> PubSubMessageMapper::map(
    const PipelineRecord& record) const {
  google::pubsub::v1::PubsubMessage message;
  if (spec_.data_field) {
    auto it = record.fields.find(*spec_.data_field);
    if (it == record.fields.end()) {
      return absl::InvalidArgumentError(
          fmt::format("the record has no data field '{}'", *spec_.data_field));
    }
    message.set_data(FieldText(*it));
  } else {
    message.set_data(record.fields.dump());
  }
  auto& attributes = *message.mutable_attributes();
  if (spec_.include_record_attributes) {
    for (const auto& [k, v] : record.attributes) attributes[k] = v;
  }
  for (const auto& [name, tmpl] : attributes_) {
    GCP_ASSIGN_OR_RETURN(attributes[name], tmpl.render(record));
  }
  if (ordering_key_) {
    GCP_ASSIGN_OR_RETURN(std::string key, ordering_key_->render(record));
    message.set_ordering_key(std::move(key));
  }
  return message;
}

}  // namespace gcpstream::pipeline
