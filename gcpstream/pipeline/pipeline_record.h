#ifndef GCPSTREAM_PIPELINE_PIPELINE_RECORD_H_
#define GCPSTREAM_PIPELINE_PIPELINE_RECORD_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace gcpstream::pipeline {

// The record every declarative pipeline carries between its source, transform and sink.
//
// - `fields`: a JSON object (a line of a JSON-lines file, an element of a JSON array, the payload
//   of a Pub/Sub message parsed as JSON). Always an object, possibly empty.
// - `attributes`: string metadata beside the fields (Pub/Sub message attributes; the ordinal a
//   transform adds as an attribute).
// - `event_time_ms`: the record's event time in ms since the Unix epoch when its source knows
//   one (a Pub/Sub message's publish time); unset for file records.
// - `ordinal`: the record's 0-based position in its input when the source knows it (the file
//   source does); the transform can expose it as a field or attribute.
//
// Plain value type; copy and move freely. Not synchronized.
struct PipelineRecord {
  nlohmann::json fields = nlohmann::json::object();
  std::map<std::string, std::string> attributes;
  std::optional<std::int64_t> event_time_ms;
  std::optional<std::int64_t> ordinal;

  // The text of `name` for templates: a field first (strings as they are, numbers and booleans
  // in their JSON spelling, null as "null", objects and arrays as compact JSON), then an
  // attribute. nullopt when neither exists.
  std::optional<std::string> lookup(const std::string& name) const;
};

// The JSON text of a field value as templates print it (strings unquoted).
std::string FieldText(const nlohmann::json& value);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_PIPELINE_RECORD_H_
