#include "gcpstream/pipeline/pipeline_record.h"

namespace gcpstream::pipeline {

std::string FieldText(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

std::optional<std::string> PipelineRecord::lookup(const std::string& name) const {
  if (fields.is_object()) {
    auto it = fields.find(name);
    if (it != fields.end()) return FieldText(*it);
  }
  auto attr = attributes.find(name);
  if (attr != attributes.end()) return attr->second;
  return std::nullopt;
}

}  // namespace gcpstream::pipeline
