#include "gcpstream/runtime/job_runner.h"

#include <chrono>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "gcpstream/util/absl_fmt.h"
#include <spdlog/spdlog.h>

#include "gcpstream/runtime/job_attempt.h"
#include "gcpstream/runtime/prometheus_reporter.h"

namespace gcpstream::runtime {
namespace {

std::string NewJobId() {
  std::random_device rd;
  std::mt19937_64 gen(rd());
  return fmt::format("{:016x}", gen());
}

}  // namespace

JobRunner::JobRunner(std::string job_name, JobGraph graph, ExecutionConfig config)
    : job_name_(std::move(job_name)), graph_(std::move(graph)), config_(std::move(config)) {}

JobRunner::~JobRunner() = default;

void JobRunner::cancel(absl::Status reason) {
  std::lock_guard lock(mu_);
  if (cancel_reason_.ok()) cancel_reason_ = reason;
  if (attempt_ != nullptr) attempt_->fail(std::move(reason));
}

JobResult JobRunner::run() {
  const auto started = std::chrono::steady_clock::now();
  JobResult result;
  result.job_name = job_name_;
  result.job_id = NewJobId();

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

  JobServices services;
  services.job_name = job_name_;
  services.job_id = result.job_id;
  services.attempt_number = 0;
  services.config = config_;
  services.metrics = &metrics_;
  {
    auto attempt = std::make_unique<JobAttempt>(graph_, services, JobAttempt::RestoredState{});
    {
      std::lock_guard lock(mu_);
      attempt_ = attempt.get();
      if (!cancel_reason_.ok()) attempt_->fail(cancel_reason_);
    }
    result.status = attempt->run();
    {
      std::lock_guard lock(mu_);
      attempt_ = nullptr;
    }
  }

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
  return result;
}

}  // namespace gcpstream::runtime
