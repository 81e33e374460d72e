#include "gcpstream/pipeline/pipeline_source.h"

#include "gcpstream/pipeline/bigquery_source_factory.h"
#include "gcpstream/pipeline/bigtable_change_stream_source_factory.h"
#include "gcpstream/pipeline/bigtable_source_factory.h"
#include "gcpstream/pipeline/file_source.h"
#include "gcpstream/pipeline/pubsub_source_factory.h"
#include "gcpstream/pipeline/spanner_change_stream_source_factory.h"
#include "gcpstream/pipeline/spanner_source_factory.h"

namespace gcpstream::pipeline {

absl::StatusOr<PipelineSource> MakePipelineSource(const SourceSpec& spec) {
  if (const auto* file = std::get_if<FileSourceSpec>(&spec)) {
    return PipelineSource::of(std::make_shared<FileSource>(*file), "file");
  }
  if (const auto* spanner = std::get_if<SpannerSourceSpec>(&spec)) {
    return MakeSpannerPipelineSource(*spanner);
  }
  if (const auto* changes = std::get_if<SpannerChangeStreamSourceSpec>(&spec)) {
    return MakeSpannerChangeStreamPipelineSource(*changes);
  }
  if (const auto* changes = std::get_if<BigtableChangeStreamSourceSpec>(&spec)) {
    return MakeBigtableChangeStreamPipelineSource(*changes);
  }
  if (const auto* read = std::get_if<BigQuerySourceSpec>(&spec)) {
    return MakeBigQueryPipelineSource(*read);
  }
  if (const auto* scan = std::get_if<BigtableSourceSpec>(&spec)) {
    return MakeBigtablePipelineSource(*scan);
  }
  return MakePubSubPipelineSource(std::get<PubSubSourceSpec>(spec));
}

}  // namespace gcpstream::pipeline
