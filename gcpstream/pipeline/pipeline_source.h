#ifndef GCPSTREAM_PIPELINE_PIPELINE_SOURCE_H_
#define GCPSTREAM_PIPELINE_PIPELINE_SOURCE_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gcpstream/api/watermark.h"
#include "gcpstream/pipeline/pipeline_record.h"
#include "gcpstream/pipeline/pipeline_spec.h"
#include "gcpstream/runtime/stream_execution_environment.h"

namespace gcpstream::pipeline {

// A source of PipelineRecord, ready to be added to a job. It hides the source's split and
// enumerator-state types, so every kind of source (file, Pub/Sub, ...) plugs into the same
// pipeline assembly.
//
//   auto source = std::make_shared<MySource>(...);   // a Source<PipelineRecord, S, E>
//   return PipelineSource::of(std::move(source), "pubsub");
struct PipelineSource {
  // Adds the source node (named `name`, uid "source") to `env` and returns its stream.
  std::function<DataStream<PipelineRecord>(StreamExecutionEnvironment& env,
                                           const std::string& name)>
      add_to;
  std::string kind;  // "file", "pubsub" (for logs)

  template <typename SourceT>
  static PipelineSource of(std::shared_ptr<SourceT> source, std::string kind,
                           WatermarkStrategy<PipelineRecord> watermarks =
                               WatermarkStrategy<PipelineRecord>::no_watermarks()) {
    static_assert(std::is_same_v<typename SourceT::value_type, PipelineRecord>,
                  "a pipeline source must produce PipelineRecord");
    PipelineSource out;
    out.kind = std::move(kind);
    out.add_to = [source = std::move(source), watermarks = std::move(watermarks)](
                     StreamExecutionEnvironment& env, const std::string& name) {
      auto stream = env.from_source(source, watermarks, name);
      stream.uid("source");
      return stream;
    };
    return out;
  }
};

// The runtime source of a parsed `source:` section (file, or Pub/Sub through
// MakePubSubPipelineSource). Builds configuration only: no file is read and no RPC issued
// until the job runs.
absl::StatusOr<PipelineSource> MakePipelineSource(const SourceSpec& spec);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_PIPELINE_SOURCE_H_
