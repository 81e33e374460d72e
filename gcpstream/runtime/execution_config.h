#ifndef GCPSTREAM_RUNTIME_EXECUTION_CONFIG_H_
#define GCPSTREAM_RUNTIME_EXECUTION_CONFIG_H_

#include <chrono>
#include <optional>
#include <string>

#include "gcpstream/api/source_reader.h"
#include "gcpstream/runtime/checkpoint_config.h"
#include "gcpstream/runtime/exchange.h"

namespace gcpstream::runtime {

// Job-wide settings. Defaults follow Flink's where Flink has one.
struct ExecutionConfig {
  // Default parallelism of operators that do not set their own.
  int parallelism = 1;
  // Number of key groups: the upper bound of any keyed operator's parallelism, and the unit
  // keyed data is redistributed by on rescale (Flink's default for small jobs: 128).
  int max_parallelism = 128;
  // How often sources ask their watermark generators for a periodic watermark.
  std::chrono::milliseconds auto_watermark_interval{200};
  // With watermark alignment: align whole subtasks instead of asking readers to pause splits
  // (Flink's pipeline.watermark-alignment.allow-unaligned-source-splits).
  bool allow_unaligned_source_splits = false;
  ExchangeOptions exchange;
  SourceReaderOptions source_reader;
  // Serve Prometheus metrics on this port while the job runs (0 = any free port).
  std::optional<int> metrics_port;
  // Write a JSON snapshot of every metric here when the job ends (empty: don't).
  std::string metrics_json_path;
  // Serve the web dashboard and its JSON REST API (docs/dashboard.md) on this port while the
  // job runs (0 = any free port; JobRunner::ui_port() tells which). Unset: no dashboard.
  std::optional<int> ui_port;
  // The address the dashboard binds. Loopback by default: the API names the job's resources
  // and has no authentication, so exposing it is an explicit choice ("0.0.0.0").
  std::string ui_bind_address = "127.0.0.1";
  // Folder with the dashboard's page and its vendored scripts; empty: the build's web/ folder.
  std::string ui_assets_dir;
  CheckpointConfig checkpointing;
  RestartStrategy restart_strategy;
  // Start from this checkpoint or savepoint: a checkpoint directory, a job directory holding
  // chk-<n> folders, or a base directory of jobs (the latest complete checkpoint is used).
  std::string restore_from;
  // Restore even when the checkpoint's job name or an operator's identity (what a source or
  // sink reads or writes) does not match this job: the unmatched operators start without state
  // (Flink's --allowNonRestoredState). Off: such a restore fails, naming what differs.
  bool allow_non_restored_state = false;
};

// Whether finished subtasks wait for a final checkpoint (so committers commit through a
// checkpoint) rather than committing at end of input.
inline bool FinalCheckpointEnabled(const ExecutionConfig& config) {
  return config.checkpointing.interval.count() > 0 &&
         config.checkpointing.final_checkpoint_on_end_of_input;
}

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_EXECUTION_CONFIG_H_
