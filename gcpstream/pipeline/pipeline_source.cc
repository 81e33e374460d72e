#include "gcpstream/pipeline/pipeline_source.h"

#include "gcpstream/pipeline/file_source.h"
#include "gcpstream/pipeline/pubsub_source_factory.h"

namespace gcpstream::pipeline {

absl::StatusOr<PipelineSource> MakePipelineSource(const SourceSpec& spec) {
  if (const auto* file = std::get_if<FileSourceSpec>(&spec)) {
    return PipelineSource::of(std::make_shared<FileSource>(*file), "file");
  }
  return MakePubSubPipelineSource(std::get<PubSubSourceSpec>(spec));
}

}  // namespace gcpstream::pipeline
