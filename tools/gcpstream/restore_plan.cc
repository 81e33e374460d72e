#include "tools/gcpstream/restore_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>

#include "gcpstream/pipeline/duration_text.h"
#include "gcpstream/pipeline/redelivery_grace.h"
#include "gcpstream/pipeline/restore_point.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::cli {

RestorePlan PlanRestore(const RunFlags& flags, const pipeline::PipelineSpec& spec,
                        const std::optional<std::chrono::milliseconds>& idle_limit,
                        pipeline::RunOverrides& overrides) {
  auto Exit = [](int code) {
    RestorePlan failed;
    failed.exit_code = code;
    return failed;
  };
  if (flags.checkpoint_dir && flags.checkpoint_dir->empty()) {
    std::fprintf(stderr, "--checkpoint-dir: must not be empty\n");
    return Exit(2);
  }
  if (flags.savepoint_dir && flags.savepoint_dir->empty()) {
    std::fprintf(stderr, "--savepoint-dir: must not be empty\n");
    return Exit(2);
  }
  if (flags.restore_fallback && !flags.restore) {
    std::fprintf(stderr, "--restore-fallback: only with --restore\n");
    return Exit(2);
  }
  RestorePlan plan;
  plan.checkpoint_dir = overrides.checkpoint_dir.value_or(spec.checkpointing.dir);
  const std::string& checkpoint_dir = plan.checkpoint_dir;
  bool restored_checkpoint = false;
  if (!checkpoint_dir.empty() &&
      std::filesystem::exists(std::filesystem::path(checkpoint_dir) / "_metadata")) {
    // Jobs would write their checkpoints inside it, where --restore never looks.
    std::fprintf(stderr,
                 "checkpoint dir %s is itself a checkpoint (it holds _metadata); give the folder "
                 "checkpoints are written into, e.g. the one above <job-id>/chk-<n>\n",
                 checkpoint_dir.c_str());
    return Exit(2);
  }
  plan.savepoint_dir = flags.savepoint_dir.value_or(
      checkpoint_dir.empty() ? std::string("savepoints")
                             : pipeline::DefaultSavepointDir(checkpoint_dir));
  const std::string& savepoint_dir = plan.savepoint_dir;
  if (flags.restore) {
    if (checkpoint_dir.empty()) {
      std::fprintf(stderr,
                   "--restore needs a checkpoint directory (--checkpoint-dir or "
                   "checkpointing.dir)\n");
      return Exit(2);
    }
    auto choice =
        pipeline::ChooseRestorePoint(checkpoint_dir, savepoint_dir, flags.restore_fallback);
    if (!choice.ok()) {
      std::fprintf(stderr, "--restore: %s\n", std::string(choice.status().message()).c_str());
      return Exit(1);
    }
    for (const auto& [path, why] : choice->skipped) {
      spdlog::warn("--restore-fallback: passing over {}: {}", path, why.message());
    }
    if (!choice->path.empty()) {
      overrides.restore_from = choice->path;
      overrides.allow_non_restored_state = flags.allow_non_restored_state;
      if (!choice->incomplete.empty()) {
        spdlog::warn(
            "--restore: restoring {}; passing over {} folder{} without _metadata (being written "
            "when their job stopped, or damaged): {}",
            choice->path, choice->incomplete.size(), choice->incomplete.size() == 1 ? "" : "s",
            fmt::join(choice->incomplete, ", "));
      }
    } else if (!choice->incomplete.empty()) {
      spdlog::warn(
          "--restore: no complete checkpoint or savepoint under {} or {}; {} incomplete one{} "
          "(no _metadata: in progress when the job stopped) such as {}; starting from the "
          "beginning",
          checkpoint_dir, savepoint_dir, choice->incomplete.size(),
          choice->incomplete.size() == 1 ? "" : "s", choice->incomplete.back());
    } else {
      spdlog::info("--restore: nothing to restore under {} or {}; starting from the beginning",
                   checkpoint_dir, savepoint_dir);
    }
    restored_checkpoint = !choice->path.empty() && !choice->is_savepoint;
  }
  // The previous run may have died holding leased messages (its run marker is still there, or
  // it left a periodic checkpoint rather than a stop-with-savepoint): they come back only when
  // those leases lapse, so idleness is counted after that.
  const bool previous_unclean =
      !checkpoint_dir.empty() && !pipeline::PreviousRunEndedCleanly(checkpoint_dir);
  if (idle_limit && (previous_unclean || restored_checkpoint)) {
    plan.idle_grace = pipeline::RedeliveryGraceAfterCrash(spec);
    if (plan.idle_grace.count() > 0) {
      spdlog::info(
          "--stop-when-idle: the previous run did not end cleanly, so it may have died holding "
          "messages; they return when their leases lapse (up to {}), and idleness is counted "
          "from then on",
          pipeline::FormatDuration(plan.idle_grace));
    }
  }

  return plan;
}

}  // namespace gcpstream::cli
