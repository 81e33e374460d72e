#ifndef GCPSTREAM_RUNTIME_JOB_RUNNER_H_
#define GCPSTREAM_RUNTIME_JOB_RUNNER_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "gcpstream/runtime/execution_config.h"
#include "gcpstream/runtime/job_graph.h"
#include "gcpstream/runtime/job_result.h"
#include "gcpstream/runtime/metric_registry.h"

namespace gcpstream::runtime {

class JobAttempt;

// Runs a job graph in this process until it ends: builds the subtasks of every chain, wires
// the exchanges, starts the source coordinators, and waits. A failure anywhere cancels every
// subtask promptly and becomes the job's status.
class JobRunner {
 public:
  JobRunner(std::string job_name, JobGraph graph, ExecutionConfig config);
  ~JobRunner();

  // Blocks until the job ends.
  JobResult run();
  // Thread-safe: ends the job with CANCELLED (or `reason`).
  void cancel(absl::Status reason = absl::CancelledError("job cancelled"));

  MetricRegistry& metrics() { return metrics_; }

 private:
  std::string job_name_;
  JobGraph graph_;
  ExecutionConfig config_;
  MetricRegistry metrics_;
  std::mutex mu_;
  JobAttempt* attempt_ = nullptr;
  absl::Status cancel_reason_;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_JOB_RUNNER_H_
