#ifndef GCPSTREAM_RUNTIME_RESTORE_MATCH_H_
#define GCPSTREAM_RUNTIME_RESTORE_MATCH_H_

#include <map>
#include <string>
#include <vector>

#include "gcpstream/api/lineage.h"
#include "gcpstream/runtime/completed_checkpoint.h"
#include "gcpstream/runtime/job_graph.h"

namespace gcpstream::runtime {

// What a source or sink reads or writes, as one line: its connector and its datasets, e.g.
// "pubsub projects/p/subscriptions/orders". Empty when it cannot say (a dynamic destination).
std::string OperatorIdentity(const LineageVertex& vertex);

// The identities of a job's sources and sinks, by operator uid.
std::map<std::string, std::string> OperatorIdentities(const JobGraph& graph);

// How a checkpoint differs from the job about to restore it.
struct RestoreMismatch {
  // One sentence per difference, for the error or the warning.
  std::vector<std::string> differences;
  // Operators whose state must not be restored (an identity changed, or no such operator).
  std::vector<std::string> unmatched_uids;
  bool empty() const { return differences.empty(); }
};

// Compares a checkpoint with the job: its job name (checkpoints only: a savepoint may start a
// differently named job), each recorded identity against the job's for the same uid, and every
// operator with state against the job's uids. Checkpoints written before identities were
// recorded only get the uid comparison.
RestoreMismatch MatchRestore(const CompletedCheckpoint& checkpoint, const std::string& job_name,
                             const JobGraph& graph);

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_RESTORE_MATCH_H_
