#ifndef GCPSTREAM_RUNTIME_JOB_ATTEMPT_H_
#define GCPSTREAM_RUNTIME_JOB_ATTEMPT_H_

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gcpstream/runtime/alignment_coordinator.h"
#include "gcpstream/runtime/checkpoint_coordinator.h"
#include "gcpstream/runtime/completed_checkpoint.h"
#include "gcpstream/runtime/coordinator_executor.h"
#include "gcpstream/runtime/job_graph.h"
#include "gcpstream/runtime/job_services.h"
#include "gcpstream/runtime/operator_state.h"
#include "gcpstream/runtime/subtask.h"
#include "gcpstream/runtime/timer_service.h"

namespace gcpstream::runtime {

// One run of a job graph: the subtasks, exchanges and coordinators of one attempt. A restart
// builds a new attempt from the latest completed checkpoint.
class JobAttempt {
 public:
  JobAttempt(const JobGraph& graph, JobServices services,
             std::shared_ptr<const CompletedCheckpoint> restored,
             CheckpointCoordinator::OnCompleted on_completed);
  ~JobAttempt();

  // Builds, starts, and blocks until every subtask has ended. Returns the attempt's outcome.
  absl::Status run();
  // Thread-safe: fails the attempt (first failure wins) and cancels every subtask.
  void fail(absl::Status status);
  // Thread-safe; see CheckpointCoordinator::trigger_savepoint. Fails if the attempt is not
  // running.
  void trigger_savepoint(std::string directory, bool stop,
                         std::function<void(absl::StatusOr<std::string>)> done);

 private:
  absl::Status build();
  absl::Status map_restored_state();
  OutputBase* build_chain(int node_id, Subtask& subtask, int depth);
  OutputBase* build_outputs(int node_id, Subtask& subtask, int depth);
  bool chained(int node_id) const;
  void on_subtask_done(Subtask& subtask, absl::Status status);
  // Reports a failure to the job status tracker (when there is one).
  void record_exception(const std::string& where, const absl::Status& status);

  const JobGraph& graph_;
  JobServices services_;
  std::shared_ptr<const CompletedCheckpoint> restored_checkpoint_;
  CheckpointCoordinator::OnCompleted on_completed_;
  // Restored state per operator uid, per subtask (kCoordinatorSubtask for coordinators).
  std::map<std::string, std::map<int, OperatorStateReader>> restored_;
  std::unique_ptr<TimerThread> timers_;
  std::unique_ptr<CoordinatorExecutor> coordinator_;
  std::unique_ptr<AlignmentCoordinator> alignment_;
  std::unique_ptr<CheckpointCoordinator> checkpoints_;
  std::vector<int> parallelism_;                                   // by node id
  std::map<int, std::unique_ptr<SourceCoordinatorBase>> sources_;  // by node id
  std::map<int, std::vector<std::shared_ptr<void>>> gates_;        // by consuming node id
  std::vector<std::unique_ptr<Subtask>> subtasks_;
  std::map<int, std::vector<Subtask*>> subtasks_by_head_;

  std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
  bool started_ = false;
  absl::Status failure_;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_JOB_ATTEMPT_H_
