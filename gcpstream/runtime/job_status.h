#ifndef GCPSTREAM_RUNTIME_JOB_STATUS_H_
#define GCPSTREAM_RUNTIME_JOB_STATUS_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace gcpstream::runtime {

struct JobGraph;

// Lifecycle of a job as the dashboard shows it (Flink's JobStatus names).
enum class JobState { kCreated, kRunning, kRestarting, kFinished, kFailed, kCanceled };
const char* JobStateName(JobState state);  // "CREATED", "RUNNING", ...

// The job graph as an operator sees it: the logical operators, and the tasks (chains of
// operators that run in one subtask thread) they were grouped into.
struct JobPlan {
  struct Operator {
    int id = 0;
    std::string name;
    std::string uid;
    std::string kind;  // "source", "operator" or "sink"
    int parallelism = 0;
    int task = 0;  // id of the task (chain) it runs in: the id of the chain's first operator
  };
  struct Edge {
    int source = 0;  // operator ids
    int target = 0;
    // "FORWARD", "REBALANCE" or "HASH" (Flink's ship strategies); a chained edge is FORWARD
    // inside one subtask, never crossing threads.
    std::string ship_strategy;
    bool chained = false;
  };
  struct Task {
    int id = 0;
    std::string name;  // "Source: a -> Map -> Sink: b", the subtasks' thread names
    int parallelism = 0;
    std::vector<int> operators;  // in chain order
  };
  std::vector<Operator> operators;
  std::vector<Edge> edges;
  std::vector<Task> tasks;
};

// The plan of `graph` once parallelism defaults are applied (the chaining rule of JobAttempt:
// a node joins its input's chain when the edge is not an explicit repartitioning and the
// parallelism is equal).
JobPlan PlanOf(const JobGraph& graph, int default_parallelism);

// One checkpoint or savepoint as the checkpoint coordinator saw it.
struct CheckpointStats {
  enum class Status { kInProgress, kCompleted, kFailed };
  std::int64_t id = 0;
  bool is_savepoint = false;
  Status status = Status::kInProgress;
  std::int64_t trigger_timestamp_ms = 0;  // wall clock (ms since the Unix epoch)
  std::int64_t latest_ack_timestamp_ms = 0;
  std::int64_t duration_ms = 0;  // trigger to completion (or failure)
  // Longest barrier alignment of any subtask (first barrier in to last barrier in), ms.
  std::int64_t alignment_duration_ms = 0;
  std::int64_t state_size_bytes = 0;  // sum of every operator's state elements
  int num_subtasks = 0;
  int num_acknowledged_subtasks = 0;
  std::string failure_message;  // failed only, with its code
  std::string external_path;    // its directory, when persisted
};
const char* CheckpointStatusName(CheckpointStats::Status status);  // "IN_PROGRESS", ...

// A failure the job saw: a subtask or a coordinator that failed an attempt.
struct JobException {
  std::int64_t timestamp_ms = 0;  // wall clock
  int attempt = 0;
  std::string task;  // the subtask ("Map (2/4)#0": 2nd of 4, attempt 0) or "job coordinator"
  std::string code;  // absl::StatusCodeToString: "UNAVAILABLE", ...
  std::string message;
  bool root_cause = false;  // the first failure of its attempt
};

// One watermark alignment group (sources declaring the same group).
struct AlignmentGroupStatus {
  std::string group;
  std::int64_t max_drift_ms = 0;
  std::int64_t max_allowed_watermark = 0;
  std::map<std::string, std::int64_t> reader_watermarks;  // by reader ("operator/subtask")
  std::int64_t updated_ms = 0;
};

// Everything a JobStatusTracker knows, copied out at one instant.
struct JobStatusSnapshot {
  std::string job_name;
  std::string job_id;
  JobState state = JobState::kCreated;
  std::int64_t start_time_ms = 0;  // wall clock; 0 before the job started
  std::int64_t end_time_ms = 0;    // 0 while it runs
  int restarts = 0;
  int parallelism = 0;  // the job's default parallelism
  JobPlan plan;
  std::vector<CheckpointStats> checkpoints;  // oldest first, the last `history_size` of them
  std::int64_t completed_checkpoints = 0;    // every one so far, not only the history
  std::int64_t failed_checkpoints = 0;
  std::optional<CheckpointStats> restored;  // the checkpoint or savepoint the job started from
  std::int64_t restore_timestamp_ms = 0;
  std::vector<JobException> exceptions;  // oldest first, at most the last `history_size`
  std::vector<AlignmentGroupStatus> alignment;
};

// What a running job reports about itself to observers (the web dashboard, tests): its state,
// plan, checkpoint history and failures. Written by the runtime (job runner, checkpoint
// coordinator, subtasks), read by any thread. Thread-safe; every method takes a short mutex.
// Checkpoint and exception histories keep the last `history_size` entries (default 100).
class JobStatusTracker {
 public:
  explicit JobStatusTracker(std::size_t history_size = 100) : history_size_(history_size) {}

  void set_job(std::string name, std::string id, int parallelism, JobPlan plan);
  void set_job_id(std::string id);
  void set_state(JobState state, std::int64_t now_ms);
  void set_restarts(int restarts);
  void set_restored(const CheckpointStats& restored, std::int64_t now_ms);

  void checkpoint_triggered(std::int64_t id, bool is_savepoint, std::int64_t trigger_ms,
                            int num_subtasks);
  // A subtask's acknowledgement: the state it sent and how long its alignment took.
  void checkpoint_acknowledged(std::int64_t id, std::int64_t state_bytes, std::int64_t alignment_ms,
                               std::int64_t now_ms);
  // State of the source coordinators, counted into the checkpoint's size.
  void checkpoint_state_added(std::int64_t id, std::int64_t state_bytes);
  void checkpoint_completed(std::int64_t id, std::int64_t duration_ms, std::string path);
  void checkpoint_failed(std::int64_t id, std::int64_t duration_ms, const absl::Status& reason);

  // `task` names where it happened ("Map (2/4)#0"); the first of an attempt is its root cause.
  void record_exception(int attempt, std::string task, const absl::Status& status,
                        std::int64_t now_ms);

  void update_alignment(AlignmentGroupStatus group);

  JobStatusSnapshot snapshot() const;

 private:
  CheckpointStats* find(std::int64_t id);

  const std::size_t history_size_;
  mutable std::mutex mu_;
  JobStatusSnapshot s_;
  std::map<int, bool> attempts_with_exception_;
};

// Wall-clock milliseconds since the Unix epoch.
std::int64_t WallNowMs();

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_JOB_STATUS_H_
