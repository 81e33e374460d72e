#ifndef GCPSTREAM_RUNTIME_JOB_SERVICES_H_
#define GCPSTREAM_RUNTIME_JOB_SERVICES_H_

#include <functional>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "gcpstream/runtime/coordinator_executor.h"
#include "gcpstream/runtime/execution_config.h"
#include "gcpstream/runtime/metric_registry.h"
#include "gcpstream/runtime/timer_service.h"

namespace gcpstream::runtime {

class AlignmentCoordinator;
class CheckpointCoordinator;
class JobStatusTracker;

// What every subtask and coordinator of one job attempt shares. Owned by the job execution;
// outlives every subtask and coordinator of the attempt.
struct JobServices {
  std::string job_name;
  std::string job_id;
  int attempt_number = 0;
  ExecutionConfig config;
  MetricRegistry* metrics = nullptr;
  // What each source and sink reads or writes, by operator uid; recorded in every checkpoint.
  std::map<std::string, std::string> operator_identities;
  TimerThread* timers = nullptr;
  CoordinatorExecutor* coordinator = nullptr;
  AlignmentCoordinator* alignment = nullptr;
  CheckpointCoordinator* checkpoints = nullptr;
  // Where the job reports its checkpoints and failures to observers (may be null).
  JobStatusTracker* status = nullptr;
  // Thread-safe: fails the whole job attempt (first failure wins).
  std::function<void(absl::Status)> fail_job;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_JOB_SERVICES_H_
