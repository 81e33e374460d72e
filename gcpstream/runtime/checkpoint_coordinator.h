#ifndef GCPSTREAM_RUNTIME_CHECKPOINT_COORDINATOR_H_
#define GCPSTREAM_RUNTIME_CHECKPOINT_COORDINATOR_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/runtime/channel.h"
#include "gcpstream/runtime/completed_checkpoint.h"
#include "gcpstream/runtime/job_services.h"
#include "gcpstream/runtime/source_coordinator.h"

namespace gcpstream::runtime {

// A subtask as the checkpoint coordinator sees it. The methods are thread-safe (they post
// mails to the subtask).
class CheckpointParticipant {
 public:
  virtual ~CheckpointParticipant() = default;
  virtual const std::string& name() const = 0;
  virtual void trigger_checkpoint(const CheckpointBarrier& barrier) = 0;
  virtual void notify_checkpoint_complete(std::int64_t checkpoint_id) = 0;
  virtual void notify_checkpoint_aborted(std::int64_t checkpoint_id) = 0;
  // Thread-safe: what the participant is blocked on right now, in words ("" when it is not in
  // a described wait). Named by a checkpoint that times out.
  virtual std::string waiting_on() const { return {}; }
};

// What one subtask snapshotted: per operator uid, its lists.
struct SubtaskSnapshot {
  struct Operator {
    std::string uid;
    int parallelism = 0;
    int subtask_index = 0;
    std::map<std::string, std::vector<StateElement>> lists;
  };
  std::vector<Operator> operators;
  // How long the subtask's barrier alignment took (first barrier in to last), ms.
  std::int64_t alignment_ms = 0;
};

// Drives checkpoints and savepoints of one job attempt, on the coordinator thread:
// trigger (source coordinators snapshot, then every subtask is asked; sources emit barriers,
// other subtasks align them) -> every subtask acknowledges with its state -> the checkpoint is
// written durably (state files, then _metadata) -> only then every subtask and coordinator is
// notified of completion. At most one checkpoint is in flight; one that does not complete in
// `timeout` is aborted with a message naming it and the subtasks that did not acknowledge; more
// than `tolerable_failed_checkpoints` failures in a row fail the job.
class CheckpointCoordinator {
 public:
  using OnCompleted = std::function<void(std::shared_ptr<const CompletedCheckpoint>)>;

  CheckpointCoordinator(JobServices& services, std::vector<CheckpointParticipant*> participants,
                        std::vector<SourceCoordinatorBase*> sources,
                        std::map<std::string, int> operator_parallelism,
                        std::int64_t last_checkpoint_id, OnCompleted on_completed);
  ~CheckpointCoordinator();

  // Starts periodic checkpoints (if an interval is set). Thread-safe.
  void start();
  // Stops triggering; pending savepoint requests fail. Coordinator thread.
  void shutdown();

  // Thread-safe. Takes a savepoint into `directory` (a savepoint-<job>-<n> folder is created
  // inside); with `stop`, the job ends once it completed and committers committed. `done`
  // receives the savepoint's path or the failure.
  void trigger_savepoint(std::string directory, bool stop,
                         std::function<void(absl::StatusOr<std::string>)> done);
  // Thread-safe: triggers a checkpoint now (tests, and the final checkpoint).
  void trigger_checkpoint_now();

  // Thread-safe; called by subtasks.
  void acknowledge(std::int64_t checkpoint_id, int participant, SubtaskSnapshot snapshot);
  void decline(std::int64_t checkpoint_id, int participant, absl::Status reason);
  void participant_finished(int participant);
  // A finished subtask whose final checkpoint completed is exiting: it takes part in no
  // further checkpoint (its state from then on is empty, as a finished subtask's is).
  void participant_exited(int participant);

  // Coordinator thread (or after the attempt ended).
  std::optional<std::int64_t> last_completed_id() const { return last_completed_id_; }

 private:
  struct SavepointRequest {
    std::string directory;
    bool stop = false;
    std::function<void(absl::StatusOr<std::string>)> done;
  };
  struct Pending {
    CheckpointBarrier barrier;
    std::set<int> awaiting;
    CompletedCheckpoint checkpoint;
    std::optional<SavepointRequest> savepoint;
    std::shared_ptr<util::TimerHandle> timeout;
    std::chrono::steady_clock::time_point started;
    bool writing = false;
  };

  // "not acknowledged by: <subtask> (waiting: <what>); ..." for the pending checkpoint.
  std::string describe_awaiting() const;
  void schedule_periodic(std::chrono::milliseconds delay);
  void trigger(std::optional<SavepointRequest> savepoint, bool periodic);
  void on_acknowledged();
  void finalize(absl::Status written);
  void abort(std::int64_t checkpoint_id, absl::Status reason);
  void after_checkpoint();

  JobServices& services_;
  std::vector<CheckpointParticipant*> participants_;
  std::vector<SourceCoordinatorBase*> sources_;
  std::map<std::string, int> parallelism_;
  OnCompleted on_completed_;
  std::int64_t next_id_;
  std::optional<std::int64_t> last_completed_id_;
  std::optional<Pending> pending_;
  std::deque<SavepointRequest> savepoint_queue_;
  std::set<int> finished_;
  std::set<int> exited_;
  bool final_triggered_ = false;
  std::optional<std::int64_t> final_id_;
  int consecutive_failures_ = 0;
  bool shut_down_ = false;
  std::chrono::steady_clock::time_point last_completion_ = std::chrono::steady_clock::now();
  std::shared_ptr<util::TimerHandle> periodic_timer_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_CHECKPOINT_COORDINATOR_H_
