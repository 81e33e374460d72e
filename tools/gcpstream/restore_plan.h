#ifndef GCPSTREAM_TOOLS_GCPSTREAM_RESTORE_PLAN_H_
#define GCPSTREAM_TOOLS_GCPSTREAM_RESTORE_PLAN_H_

#include <chrono>
#include <optional>
#include <string>

#include "gcpstream/pipeline/pipeline_job.h"
#include "gcpstream/pipeline/pipeline_spec.h"
#include "tools/gcpstream/run_command.h"

namespace gcpstream::cli {

// The part of `gcpstream run` that reads the checkpoint folder before the job starts.
struct RestorePlan {
  // Non-zero: the run must end with this exit code (the reason is already on stderr): 2 for a
  // bad flag or folder, 1 for a restore point that cannot be read.
  int exit_code = 0;
  std::string checkpoint_dir;  // "" when checkpoints stay in memory
  std::string savepoint_dir;   // where SIGTERM / idle savepoints go
  // How long --stop-when-idle waits before it counts idleness: the longest lease a previous run
  // that died may still hold (pipeline::RedeliveryGraceAfterCrash), else 0.
  std::chrono::milliseconds idle_grace{0};
};

// Checks the checkpoint and savepoint flags; with --restore chooses the restore point
// (pipeline::ChooseRestorePoint, --restore-fallback) and sets overrides.restore_from and
// allow_non_restored_state, warning about every folder passed over; and decides the idle grace
// from the run marker and the kind of restore point. Logs what it decided.
RestorePlan PlanRestore(const RunFlags& flags, const pipeline::PipelineSpec& spec,
                        const std::optional<std::chrono::milliseconds>& idle_limit,
                        pipeline::RunOverrides& overrides);

}  // namespace gcpstream::cli

#endif  // GCPSTREAM_TOOLS_GCPSTREAM_RESTORE_PLAN_H_
