#ifndef GCPSTREAM_RUNTIME_STATE_REDISTRIBUTION_H_
#define GCPSTREAM_RUNTIME_STATE_REDISTRIBUTION_H_

#include <map>
#include <string_view>

#include "gcpstream/runtime/completed_checkpoint.h"
#include "gcpstream/runtime/operator_state.h"

namespace gcpstream::runtime {

// Lists whose names start with this prefix are given whole to every subtask on restore (each
// subtask keeps what belongs to it, e.g. the key groups it owns).
inline constexpr std::string_view kBroadcastListPrefix = "broadcast:";

// Maps an operator's checkpointed state to the subtasks of a job running at
// `new_parallelism`:
// - the coordinator's state (kCoordinatorSubtask) is kept as it is;
// - at the same parallelism, subtask i gets what subtask i wrote;
// - otherwise every list is concatenated in subtask order and cut into `new_parallelism`
//   contiguous, near-equal parts (Flink's even-split redistribution of operator list state):
//   reader splits, writer states and committables each land in exactly one new subtask;
// - "broadcast:" lists go whole to every subtask.
// Every subtask receives every list name, possibly empty, so it can tell it was restored.
std::map<int, OperatorStateReader> Redistribute(const CompletedCheckpoint::OperatorState& state,
                                                int new_parallelism);

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_STATE_REDISTRIBUTION_H_
