#ifndef GCPSTREAM_PIPELINE_PIPELINE_JOB_H_
#define GCPSTREAM_PIPELINE_PIPELINE_JOB_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "gcpstream/connector/failure_handler.h"
#include "gcpstream/pipeline/pipeline_record.h"
#include "gcpstream/pipeline/pipeline_spec.h"
#include "gcpstream/runtime/execution_config.h"
#include "gcpstream/runtime/stream_execution_environment.h"

namespace gcpstream::pipeline {

// Command-line settings that take precedence over the pipeline file.
struct RunOverrides {
  std::optional<int> parallelism;
  std::optional<std::string> checkpoint_dir;
  std::optional<std::chrono::milliseconds> checkpoint_interval;
  std::optional<int> metrics_port;
  // The web dashboard (ExecutionConfig::ui_port / ui_bind_address / ui_assets_dir).
  std::optional<int> ui_port;
  std::string ui_bind_address = "127.0.0.1";
  std::string ui_assets_dir;
  // A checkpoint or savepoint directory (or a base directory) to continue from.
  std::string restore_from;
  // Restore even when the checkpoint belongs to another pipeline (see ExecutionConfig).
  bool allow_non_restored_state = false;
};

// Operator names of an assembled job, for reading its metrics.
inline constexpr char kSourceNode[] = "source";
inline constexpr char kTransformNode[] = "transform";
inline constexpr char kSinkNode[] = "sink";

// The job's settings: the file's checkpointing and restart sections, then the overrides.
runtime::ExecutionConfig MakeExecutionConfig(const PipelineSpec& spec,
                                             const RunOverrides& overrides);

// The failure handler of `failure_handler:` (a dead-letter queue is built, not opened).
absl::StatusOr<std::shared_ptr<connector::FailureHandler>> MakeFailureHandler(
    const FailureHandlerSpec& spec);

// Builds the job graph: source -> transform (keep/drop, ordinal) -> sink (the mapping is the
// sink's serializer; a record the mapping cannot convert is a serialization failure, routed to
// the failure handler). Operators carry the uids "source", "transform", "sink", so checkpoints
// stay restorable across runs of the same file. Builders are validated here (the sink's
// build() errors name the option); nothing connects to a service until the job runs.
absl::StatusOr<std::unique_ptr<StreamExecutionEnvironment>> AssembleJob(
    const PipelineSpec& spec, const RunOverrides& overrides);

// The sink part alone, on an existing stream (used by AssembleJob; exposed for describe, which
// validates the sink without a source).
absl::Status AttachSink(const PipelineSpec& spec, DataStream<PipelineRecord> stream);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_PIPELINE_JOB_H_
