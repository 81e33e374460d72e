#include "gcpstream/runtime/job_runner.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <future>
#include <random>

#include "gcpstream/runtime/checkpoint_storage.h"
#include "gcpstream/runtime/job_attempt.h"
#include "gcpstream/runtime/prometheus_reporter.h"
#include "gcpstream/runtime/restore_match.h"
#include "gcpstream/runtime/web/job_web_server.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::runtime {
namespace {

std::string NewJobId() {
  std::random_device rd;
  std::mt19937_64 gen(rd());
  return fmt::format("{:016x}", gen());
}

// Restart-strategy bookkeeping across attempts.
class RestartTracker {
 public:
  explicit RestartTracker(const RestartStrategy& strategy) : strategy_(strategy) {}

  // The delay before the next attempt, or nullopt when no further restart is allowed.
  std::optional<std::chrono::milliseconds> next(std::chrono::steady_clock::time_point started) {
    switch (strategy_.kind) {
      case RestartStrategyKind::kNone:
        return std::nullopt;
      case RestartStrategyKind::kFixedDelay:
        if (restarts_ >= strategy_.max_attempts) return std::nullopt;
        ++restarts_;
        return strategy_.delay;
      case RestartStrategyKind::kExponentialDelay: {
        // Ran long enough without failing: the backoff starts over.
        if (std::chrono::steady_clock::now() - started >= strategy_.reset_after) {
          current_ = std::chrono::milliseconds(0);
        }
        if (current_.count() == 0) {
          current_ = strategy_.initial_delay;
        } else {
          current_ =
              std::min(strategy_.max_delay,
                       std::chrono::milliseconds(static_cast<std::int64_t>(
                           static_cast<double>(current_.count()) * strategy_.backoff_multiplier)));
        }
        ++restarts_;
        return current_;
      }
    }
    return std::nullopt;
  }

 private:
  RestartStrategy strategy_;
  int restarts_ = 0;
  std::chrono::milliseconds current_{0};
};

}  // namespace

JobRunner::JobRunner(std::string job_name, JobGraph graph, ExecutionConfig config)
    : job_name_(std::move(job_name)),
      graph_(std::move(graph)),
      config_(std::move(config)),
      job_id_(NewJobId()) {
  status_.set_job(job_name_, job_id_, config_.parallelism, PlanOf(graph_, config_.parallelism));
}

JobRunner::~JobRunner() = default;

void JobRunner::cancel(absl::Status reason) {
  std::lock_guard lock(mu_);
  if (cancel_reason_.ok()) cancel_reason_ = reason;
  if (attempt_ != nullptr) attempt_->fail(std::move(reason));
  cv_.notify_all();
}

std::shared_ptr<const CompletedCheckpoint> JobRunner::latest_checkpoint() const {
  std::lock_guard lock(mu_);
  return latest_;
}

absl::StatusOr<std::string> JobRunner::savepoint(const std::string& directory, bool stop) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<std::string>>>();
  auto future = promise->get_future();
  {
    std::lock_guard lock(mu_);
    if (attempt_ == nullptr) return absl::FailedPreconditionError("the job is not running");
    if (stop) stopping_ = true;
    attempt_->trigger_savepoint(directory, stop, [promise](absl::StatusOr<std::string> result) {
      promise->set_value(std::move(result));
    });
  }
  auto result = future.get();
  if (!result.ok() && stop) {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  return result;
}

absl::StatusOr<std::string> JobRunner::trigger_savepoint(const std::string& directory) {
  return savepoint(directory, false);
}

absl::StatusOr<std::string> JobRunner::stop_with_savepoint(const std::string& directory) {
  return savepoint(directory, true);
}

bool JobRunner::wait_before_restart(std::chrono::milliseconds delay) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, delay, [&] { return !cancel_reason_.ok(); });
  return cancel_reason_.ok();
}

JobResult JobRunner::run() {
  const auto started = std::chrono::steady_clock::now();
  JobResult result;
  result.job_name = job_name_;

  std::shared_ptr<const CompletedCheckpoint> restored;
  if (!config_.restore_from.empty()) {
    auto dir = CheckpointStorage::find_latest(config_.restore_from);
    absl::StatusOr<CompletedCheckpoint> read =
        dir.ok() ? CheckpointStorage::read(*dir)
                 : absl::StatusOr<CompletedCheckpoint>(dir.status());
    if (!read.ok()) {
      result.status = read.status();
      result.job_id = job_id_;
      status_.record_exception(0, "restore", result.status, WallNowMs());
      status_.set_state(JobState::kFailed, WallNowMs());
      return result;
    }
    RestoreMismatch mismatch = MatchRestore(*read, job_name_, graph_);
    if (!mismatch.empty()) {
      const std::string what = fmt::format(
          "{} {} ({}) does not match job '{}': {}", read->is_savepoint ? "savepoint" : "checkpoint",
          read->id, read->path, job_name_, fmt::join(mismatch.differences, "; "));
      if (!config_.allow_non_restored_state) {
        result.status = absl::FailedPreconditionError(fmt::format(
            "{}. Restore it into the job that wrote it, or allow dropping the state that does "
            "not match (gcpstream run --allow-non-restored-state; "
            "ExecutionConfig::allow_non_restored_state)",
            what));
        result.job_id = job_id_;
        status_.record_exception(0, "restore", result.status, WallNowMs());
        status_.set_state(JobState::kFailed, WallNowMs());
        return result;
      }
      spdlog::warn(
          "job '{}': {}; allow_non_restored_state is set: restoring without the state "
          "of {}",
          job_name_, what, fmt::join(mismatch.unmatched_uids, ", "));
      for (const auto& uid : mismatch.unmatched_uids) read->operators.erase(uid);
    }
    restored = std::make_shared<const CompletedCheckpoint>(std::move(*read));
    // Continuing from a checkpoint keeps the job's identity (and its checkpoint folder); a
    // savepoint starts a new job.
    if (!restored->is_savepoint && !restored->job_id.empty()) job_id_ = restored->job_id;
    spdlog::info("job '{}': restoring from {} {} ({})", job_name_,
                 restored->is_savepoint ? "savepoint" : "checkpoint", restored->id, restored->path);
    CheckpointStats from;
    from.id = restored->id;
    from.is_savepoint = restored->is_savepoint;
    from.status = CheckpointStats::Status::kCompleted;
    from.trigger_timestamp_ms = restored->timestamp_ms;
    from.external_path = restored->path;
    status_.set_job_id(job_id_);
    status_.set_restored(from, WallNowMs());
    std::lock_guard lock(mu_);
    latest_ = restored;
  }
  result.job_id = job_id_;

  std::unique_ptr<PrometheusReporter> reporter;
  if (config_.metrics_port) {
    auto started_reporter = PrometheusReporter::start(metrics_, *config_.metrics_port);
    if (!started_reporter.ok()) {
      result.status = started_reporter.status();
      return result;
    }
    reporter = std::move(*started_reporter);
    spdlog::info("job '{}': metrics at http://127.0.0.1:{}/metrics", job_name_, reporter->port());
  }
  std::unique_ptr<web::JobWebServer> dashboard;
  if (config_.ui_port) {
    web::WebServerOptions options;
    options.port = *config_.ui_port;
    options.bind_address = config_.ui_bind_address;
    options.assets_dir = config_.ui_assets_dir;
    auto started_server = web::JobWebServer::start(status_, metrics_, options);
    if (!started_server.ok()) {
      result.status = started_server.status();
      status_.set_state(JobState::kFailed, WallNowMs());
      return result;
    }
    dashboard = std::move(*started_server);
    ui_port_.store(dashboard->port());
    spdlog::info("job '{}': dashboard at {}", job_name_,
                 web::HttpUrl(config_.ui_bind_address, dashboard->port()));
  }

  RestartTracker restarts(config_.restart_strategy);
  for (int attempt_number = 0;; ++attempt_number) {
    JobServices services;
    services.job_name = job_name_;
    services.job_id = job_id_;
    services.attempt_number = attempt_number;
    services.config = config_;
    services.metrics = &metrics_;
    services.operator_identities = OperatorIdentities(graph_);
    services.status = &status_;
    status_.set_state(JobState::kRunning, WallNowMs());
    const auto attempt_started = std::chrono::steady_clock::now();
    absl::Status status;
    {
      auto attempt = std::make_unique<JobAttempt>(
          graph_, services, restored, [this](std::shared_ptr<const CompletedCheckpoint> cp) {
            {
              std::lock_guard lock(mu_);
              latest_ = cp;
            }
            if (checkpoint_listener_) checkpoint_listener_(*cp);
          });
      {
        std::lock_guard lock(mu_);
        attempt_ = attempt.get();
        if (!cancel_reason_.ok()) attempt_->fail(cancel_reason_);
      }
      status = attempt->run();
      {
        std::lock_guard lock(mu_);
        attempt_ = nullptr;
      }
    }
    result.restarts = attempt_number;
    bool cancelled;
    {
      std::lock_guard lock(mu_);
      cancelled = !cancel_reason_.ok();
      restored = latest_;
    }
    if (status.ok() || cancelled) {
      result.status = status;
      break;
    }
    auto delay = restarts.next(attempt_started);
    if (!delay) {
      result.status = status;
      break;
    }
    spdlog::warn("job '{}' attempt {} failed: {}; restarting in {} ms from {}", job_name_,
                 attempt_number, status, delay->count(),
                 restored ? fmt::format("checkpoint {}", restored->id)
                          : std::string("the beginning (no completed checkpoint)"));
    status_.set_restarts(attempt_number + 1);
    status_.set_state(JobState::kRestarting, WallNowMs());
    if (!wait_before_restart(*delay)) {
      std::lock_guard lock(mu_);
      result.status = cancel_reason_;
      break;
    }
  }

  {
    std::lock_guard lock(mu_);
    if (latest_) {
      result.last_completed_checkpoint = latest_->id;
      result.last_checkpoint_path = latest_->path;
    }
  }
  for (const auto& node : graph_.nodes) {
    if (node.lineage) result.lineage.emplace_back(node.name, *node.lineage);
  }
  status_.set_state(result.status.ok()                                     ? JobState::kFinished
                    : result.status.code() == absl::StatusCode::kCancelled ? JobState::kCanceled
                                                                           : JobState::kFailed,
                    WallNowMs());
  result.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  result.metrics = metrics_.snapshot();
  if (!config_.metrics_json_path.empty()) {
    std::ofstream out(config_.metrics_json_path, std::ios::trunc);
    out << ToJson(result.metrics) << "\n";
    if (!out) {
      spdlog::warn("job '{}': could not write the metrics snapshot to {}", job_name_,
                   config_.metrics_json_path);
    }
  }
  dashboard.reset();
  ui_port_.store(0);
  return result;
}

}  // namespace gcpstream::runtime
