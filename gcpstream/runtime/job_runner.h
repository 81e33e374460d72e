#ifndef GCPSTREAM_RUNTIME_JOB_RUNNER_H_
#define GCPSTREAM_RUNTIME_JOB_RUNNER_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "gcpstream/runtime/completed_checkpoint.h"
#include "gcpstream/runtime/execution_config.h"
#include "gcpstream/runtime/job_graph.h"
#include "gcpstream/runtime/job_result.h"
#include "gcpstream/runtime/job_status.h"
#include "gcpstream/runtime/metric_registry.h"

namespace gcpstream::runtime {

class JobAttempt;

// Runs a job graph in this process until it ends: builds the subtasks of every chain, wires the
// exchanges, starts the coordinators, and waits. A failure anywhere cancels every subtask
// promptly; under a restart strategy the job then restarts from its latest completed
// checkpoint (sources rewind, writers and committers restore their state, committers
// re-commit), otherwise the failure becomes the job's status.
//
// run() blocks; every other method is thread-safe and meant for another thread (a signal
// handler's helper, a test).
class JobRunner {
 public:
  JobRunner(std::string job_name, JobGraph graph, ExecutionConfig config);
  ~JobRunner();

  JobResult run();

  // Ends the job with CANCELLED (or `reason`); no restart.
  void cancel(absl::Status reason = absl::CancelledError("job cancelled"));
  // Takes a savepoint into `directory` and returns its path (blocks until it completed or
  // failed). FAILED_PRECONDITION when the job is not running.
  absl::StatusOr<std::string> trigger_savepoint(const std::string& directory);
  // Takes a savepoint, lets committers commit it, and ends the job (status OK). Returns the
  // savepoint's path once it completed.
  absl::StatusOr<std::string> stop_with_savepoint(const std::string& directory);

  // The latest completed checkpoint so far (null before the first).
  std::shared_ptr<const CompletedCheckpoint> latest_checkpoint() const;
  // Called (on the coordinator thread) for every completed checkpoint; set before run().
  void on_checkpoint_completed(std::function<void(const CompletedCheckpoint&)> callback) {
    checkpoint_listener_ = std::move(callback);
  }

  MetricRegistry& metrics() { return metrics_; }
  // State, plan, checkpoint history and failures as observers see them. Thread-safe.
  const JobStatusTracker& status() const { return status_; }
  const std::string& job_id() const { return job_id_; }
  // The port the dashboard serves on once run() started it (0 before, or without one).
  int ui_port() const { return ui_port_.load(); }

 private:
  absl::StatusOr<std::string> savepoint(const std::string& directory, bool stop);
  bool wait_before_restart(std::chrono::milliseconds delay);

  std::string job_name_;
  JobGraph graph_;
  ExecutionConfig config_;
  std::string job_id_;
  MetricRegistry metrics_;
  JobStatusTracker status_;
  std::atomic<int> ui_port_{0};
  std::function<void(const CompletedCheckpoint&)> checkpoint_listener_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  JobAttempt* attempt_ = nullptr;
  absl::Status cancel_reason_;
  bool stopping_ = false;
  std::shared_ptr<const CompletedCheckpoint> latest_;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_JOB_RUNNER_H_
