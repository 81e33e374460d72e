#ifndef GCPSTREAM_PUBSUB_SOURCE_ACK_TRACKER_H_
#define GCPSTREAM_PUBSUB_SOURCE_ACK_TRACKER_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace gcpstream::pubsub {

// The acknowledgement lifecycle of one reader's messages, per split:
//   pending (received, not yet emitted) -> staged (emitted since the last checkpoint)
//   -> bound to checkpoint n (at n's snapshot) -> acknowledged (when n completes).
// Completing n takes everything bound to any checkpoint <= n, so an aborted checkpoint or a lost
// notification is healed by the next completion. Thread-safe (one mutex): the subscriber's
// callback thread adds, the subtask thread emits, binds and completes, the fetcher parks.
class AckTracker {
 public:
  void add_pending(const std::string& split, std::string ack_id);
  // pending -> staged. False when the id is no longer pending (released meanwhile, e.g. by a
  // park): it must then not be acknowledged.
  bool mark_emitted(const std::string& split, const std::string& ack_id);
  // Forgets a pending id (it is being nacked now).
  void drop(const std::string& split, const std::string& ack_id);
  // Every split's staged ids become bound to `checkpoint_id`.
  void bind(std::int64_t checkpoint_id);
  // The ids bound to checkpoints <= `checkpoint_id`, per split, now forgotten.
  std::map<std::string, std::vector<std::string>> take_completed(std::int64_t checkpoint_id);
  // Every id of `split` in any state, now forgotten (the split closes or parks: nack them).
  std::vector<std::string> take_all(const std::string& split);

  // Ids in any state: the pendingAcks gauge.
  std::int64_t outstanding() const;

 private:
  struct SplitAcks {
    absl::flat_hash_set<std::string> pending;
    std::vector<std::string> staged;
    std::map<std::int64_t, std::vector<std::string>> bound;
  };
  mutable std::mutex mu_;
  std::map<std::string, SplitAcks> splits_;
  std::int64_t outstanding_ = 0;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SOURCE_ACK_TRACKER_H_
