#ifndef GCPSTREAM_RUNTIME_COMPLETED_CHECKPOINT_H_
#define GCPSTREAM_RUNTIME_COMPLETED_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gcpstream/runtime/checkpoint_config.h"
#include "gcpstream/runtime/operator_state.h"

namespace gcpstream::runtime {

// Subtask index under which an operator's coordinator state (a split enumerator's) is kept.
inline constexpr int kCoordinatorSubtask = -1;

// A checkpoint (or savepoint) every subtask acknowledged: the state of every operator.
struct CompletedCheckpoint {
  struct OperatorState {
    int parallelism = 0;
    // subtask index (kCoordinatorSubtask for the coordinator) -> named lists
    std::map<int, std::map<std::string, std::vector<StateElement>>> subtasks;
  };

  std::int64_t id = 0;
  std::string job_id;
  std::string job_name;
  std::int64_t timestamp_ms = 0;
  bool is_savepoint = false;
  CheckpointingMode mode = CheckpointingMode::kExactlyOnce;
  std::map<std::string, OperatorState> operators;  // by operator uid
  // What each source and sink reads or writes (by operator uid; see OperatorIdentity), so that
  // a restore can tell a checkpoint of another pipeline from one of this pipeline.
  std::map<std::string, std::string> operator_identities;
  std::string path;  // its directory, when persisted
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_COMPLETED_CHECKPOINT_H_
