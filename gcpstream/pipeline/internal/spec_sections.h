#ifndef GCPSTREAM_PIPELINE_INTERNAL_SPEC_SECTIONS_H_
#define GCPSTREAM_PIPELINE_INTERNAL_SPEC_SECTIONS_H_

#include "gcpstream/pipeline/pipeline_spec.h"
#include "gcpstream/pipeline/yaml_fields.h"

// The section readers of the pipeline parser, one per top-level key. Each reads its mapping,
// reports problems to the mapping's context and calls finish().
namespace gcpstream::pipeline::internal {

SourceSpec ParseSource(YamlMap section);
PubSubSourceSpec ParsePubSubSource(YamlMap& section);
TransformSpec ParseTransform(YamlMap section);
SinkSpec ParseSink(YamlMap section);
FailureHandlerSpec ParseFailureHandler(YamlContext& ctx, const YAML::Node& node);

// A YAML scalar as a JSON value: plain scalars that read as numbers or booleans become those;
// quoted scalars stay text.
nlohmann::json ScalarJson(const YAML::Node& node, const std::string& text);

}  // namespace gcpstream::pipeline::internal

#endif  // GCPSTREAM_PIPELINE_INTERNAL_SPEC_SECTIONS_H_
