#include "tools/gcpstream/run_command.h"

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "gcpstream/pipeline/describe.h"
#include "gcpstream/pipeline/duration_text.h"
#include "gcpstream/pipeline/pipeline_job.h"
#include "gcpstream/pipeline/restore_point.h"
#include "gcpstream/pipeline/run_report.h"
#include "gcpstream/pipeline/spec_parser.h"
#include "gcpstream/runtime/web/observer_http_server.h"
#include "gcpstream/util/absl_fmt.h"
#include "tools/gcpstream/restore_plan.h"

namespace gcpstream::cli {
namespace {

using Clock = std::chrono::steady_clock;
using pipeline::ProgressSample;
using pipeline::RunObservations;

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What the threads of one run share.
struct RunState {
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  RunObservations observations;
  bool cancelled_by_user = false;                    // SIGINT
  bool cancelled_by_term = false;                    // a second SIGTERM
  std::chrono::steady_clock::time_point first_term;  // when the first SIGTERM arrived
  std::thread stopper;  // runs stop_with_savepoint (it blocks until the savepoint completed)
  bool stopping = false;
};

// Stops the job with a savepoint, once, on a thread of its own; falls back to cancel.
void RequestStop(runtime::JobRunner& runner, RunState& state, const std::string& dir,
                 const std::string& why) {
  std::lock_guard lock(state.mu);
  if (state.stopping || state.finished) return;
  state.stopping = true;
  spdlog::info("{}: stopping with a savepoint into {}", why, dir);
  state.stopper = std::thread([&runner, &state, dir] {
    auto path = runner.stop_with_savepoint(dir);
    if (path.ok()) {
      std::lock_guard lock(state.mu);
      state.observations.savepoint_path = *path;
      return;
    }
    spdlog::error("stop with savepoint failed: {}; cancelling", path.status());
    runner.cancel();
  });
}

}  // namespace

int Describe(const std::string& pipeline_file) {
  auto spec = pipeline::LoadPipelineSpec(pipeline_file);
  if (!spec.ok()) {
    std::fprintf(stderr, "%s\n", std::string(spec.status().message()).c_str());
    return 2;
  }
  auto text = pipeline::DescribePipeline(*spec);
  if (!text.ok()) {
    // A located error already starts with the file's name (as in `run`).
    const std::string message(text.status().message());
    if (message.rfind(pipeline_file + ":", 0) == 0) {
      std::fprintf(stderr, "%s\n", message.c_str());
    } else {
      std::fprintf(stderr, "%s: %s\n", pipeline_file.c_str(), message.c_str());
    }
    return 2;
  }
  std::fputs(text->c_str(), stdout);
  return 0;
}

int Run(const RunFlags& flags) {
  auto spec = pipeline::LoadPipelineSpec(flags.pipeline_file);
  if (!spec.ok()) {
    std::fprintf(stderr, "%s\n", std::string(spec.status().message()).c_str());
    return 2;
  }
  pipeline::RunOverrides overrides;
  overrides.parallelism = flags.parallelism;
  overrides.checkpoint_dir = flags.checkpoint_dir;
  overrides.metrics_port = flags.metrics_port;
  if ((flags.ui_bind || flags.ui_assets) && !flags.ui_port) {
    std::fprintf(stderr, "--ui-bind and --ui-assets set up the dashboard: give --ui-port too\n");
    return 2;
  }
  if (flags.ui_bind && !runtime::web::IsIpAddress(*flags.ui_bind)) {
    std::fprintf(stderr,
                 "--ui-bind: '%s' is not an IP address (127.0.0.1, ::1, 0.0.0.0 for every "
                 "interface)\n",
                 flags.ui_bind->c_str());
    return 2;
  }
  overrides.ui_port = flags.ui_port;
  if (flags.ui_bind) overrides.ui_bind_address = *flags.ui_bind;
  if (flags.ui_assets) overrides.ui_assets_dir = *flags.ui_assets;
  if (flags.checkpoint_interval) {
    auto d = pipeline::ParseDuration(*flags.checkpoint_interval);
    if (!d.ok()) {
      std::fprintf(stderr, "--checkpoint-interval: %s\n",
                   std::string(d.status().message()).c_str());
      return 2;
    }
    // The same range as checkpointing.interval in the file.
    if (d->count() != 0 &&
        (*d < std::chrono::milliseconds(10) || *d > std::chrono::hours(24 * 7))) {
      std::fprintf(stderr,
                   "--checkpoint-interval: '%s' is out of range: allowed 0 (off) or 10ms..7d\n",
                   flags.checkpoint_interval->c_str());
      return 2;
    }
    overrides.checkpoint_interval = *d;
  }
  std::optional<std::chrono::milliseconds> idle_limit;
  if (flags.stop_when_idle) {
    auto d = pipeline::ParseDuration(*flags.stop_when_idle);
    if (!d.ok() || d->count() <= 0) {
      std::fprintf(stderr, "--stop-when-idle: %s\n",
                   d.ok() ? "must be positive" : std::string(d.status().message()).c_str());
      return 2;
    }
    idle_limit = *d;
  }
  const RestorePlan plan = PlanRestore(flags, *spec, idle_limit, overrides);
  if (plan.exit_code != 0) return plan.exit_code;
  const std::string& checkpoint_dir = plan.checkpoint_dir;
  const std::string& savepoint_dir = plan.savepoint_dir;
  const std::chrono::milliseconds idle_grace = plan.idle_grace;

  auto env = pipeline::AssembleJob(*spec, overrides);
  if (!env.ok()) {
    // A located error already starts with the file's name.
    const std::string message(env.status().message());
    if (message.rfind(flags.pipeline_file + ":", 0) == 0) {
      std::fprintf(stderr, "%s\n", message.c_str());
    } else {
      std::fprintf(stderr, "%s: %s\n", flags.pipeline_file.c_str(), message.c_str());
    }
    return 2;
  }
  if (!checkpoint_dir.empty()) {
    if (absl::Status s = pipeline::MarkRunStarted(checkpoint_dir); !s.ok()) {
      std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
      return 1;
    }
  }

  // Signals are taken by a thread of their own: block them before any thread starts so every
  // thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);  // our own wake-up at the end
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto runner = (*env)->create_runner(spec->name);
  RunState state;
  runner->on_checkpoint_completed([&state](const runtime::CompletedCheckpoint& cp) {
    std::lock_guard lock(state.mu);
    if (cp.is_savepoint) return;
    ++state.observations.checkpoints_completed;
    state.observations.last_checkpoint_id = cp.id;
    state.observations.last_checkpoint_duration =
        std::chrono::milliseconds(std::max<std::int64_t>(0, NowMs() - cp.timestamp_ms));
  });

  std::thread signal_thread([&] {
    int sig = 0;
    while (sigwait(&signals, &sig) == 0) {
      {
        std::lock_guard lock(state.mu);
        if (state.finished) return;
      }
      if (sig == SIGINT) {
        spdlog::info("SIGINT: cancelling the job");
        {
          std::lock_guard lock(state.mu);
          state.cancelled_by_user = true;
        }
        runner->cancel();
      } else if (sig == SIGTERM) {
        bool again;
        {
          std::lock_guard lock(state.mu);
          // A supervisor that signals the whole process group (timeout, some init systems)
          // delivers one SIGTERM twice within microseconds: only a second SIGTERM at least a
          // second after the first cancels.
          const auto now = std::chrono::steady_clock::now();
          again = state.stopping && now - state.first_term >= std::chrono::seconds(1);
          if (!state.stopping) state.first_term = now;
          if (state.stopping && !again) continue;
        }
        if (again) {
          spdlog::info("SIGTERM again: cancelling the job");
          {
            std::lock_guard lock(state.mu);
            state.cancelled_by_term = true;
          }
          runner->cancel();
        } else {
          RequestStop(*runner, state, savepoint_dir, "SIGTERM");
        }
      }
    }
  });

  runtime::JobResult result;
  std::thread job([&] {
    result = runner->run();
    std::lock_guard lock(state.mu);
    state.finished = true;
    state.cv.notify_all();
  });

  // Progress: a rewritten line on a terminal, a log line every 10 s otherwise.
  const bool tty = isatty(fileno(stderr)) != 0;
  const auto tick = std::chrono::seconds(1);
  const auto log_every = std::chrono::seconds(10);
  ProgressSample previous;
  auto previous_at = Clock::now();
  auto last_log = Clock::now();
  const auto started = Clock::now();
  auto last_input_change = started;
  double last_input = 0;
  while (true) {
    {
      std::unique_lock lock(state.mu);
      if (state.cv.wait_for(lock, tick, [&] { return state.finished; })) break;
    }
    const auto now = Clock::now();
    const ProgressSample sample = pipeline::SampleProgress(runner->metrics().snapshot());
    RunObservations obs;
    {
      std::lock_guard lock(state.mu);
      obs = state.observations;
    }
    if (sample.records_in != last_input) {
      last_input = sample.records_in;
      last_input_change = now;
    }
    if (tty) {
      const std::string line = pipeline::FormatProgress(
          sample, previous,
          std::chrono::duration_cast<std::chrono::milliseconds>(now - previous_at), obs);
      std::fprintf(stderr, "\r\033[K%s", line.c_str());
      std::fflush(stderr);
      previous = sample;
      previous_at = now;
    } else if (now - last_log >= log_every) {
      spdlog::info(
          "progress: {}",
          pipeline::FormatProgress(
              sample, previous,
              std::chrono::duration_cast<std::chrono::milliseconds>(now - previous_at), obs));
      previous = sample;
      previous_at = now;
      last_log = now;
    }
    // Nothing counts as idle before the redelivery grace has passed.
    if (idle_limit && now - std::max(last_input_change, started + idle_grace) >= *idle_limit) {
      {
        std::lock_guard lock(state.mu);
        if (!state.stopping) {
          state.observations.idle_before_stop =
              std::chrono::duration_cast<std::chrono::milliseconds>(now - last_input_change);
        }
      }
      RequestStop(*runner, state, savepoint_dir,
                  fmt::format("no input for {}", pipeline::FormatDuration(*idle_limit)));
    }
  }
  if (tty) std::fprintf(stderr, "\n");
  job.join();
  pthread_kill(signal_thread.native_handle(), SIGUSR1);
  signal_thread.join();
  if (state.stopper.joinable()) state.stopper.join();

  std::fputs(pipeline::FormatSummary(result, state.observations).c_str(), stdout);
  std::fflush(stdout);
  if (result.status.ok()) {
    if (!checkpoint_dir.empty()) pipeline::MarkRunEndedCleanly(checkpoint_dir);
    return 0;
  }
  if (state.cancelled_by_user && absl::IsCancelled(result.status)) return 130;
  if (state.cancelled_by_term && absl::IsCancelled(result.status)) return 143;
  return 1;
}

}  // namespace gcpstream::cli
