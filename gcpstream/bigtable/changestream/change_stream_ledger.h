#ifndef GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_LEDGER_H_
#define GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_LEDGER_H_

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gcpstream/bigtable/changestream/change_stream_split.h"

namespace gcpstream::bigtable {

// What a partition's CloseStream said, as the coordinator needs it.
struct PartitionClose {
  std::vector<PartitionToken> tokens;
  std::vector<RowKeyRange> new_partitions;
  absl::Time low_watermark = absl::UnixEpoch();
};

// The coordinator's account of a change stream's partitions: every partition being read or
// waiting to be (ready, or held by a reader), the continuation tokens closed partitions handed
// over, and the successor partitions their closes named. A CloseStream must hand over its whole
// range: its tokens tile the closed partition, each inside one of the new partitions it names.
// The tokens are pooled by key range, whichever close brought them: a successor is released as
// soon as the pooled tokens inside it tile it exactly — after a split at once, after a merge
// only when every parent has closed — so each piece resumes exactly where its parent stopped and
// no change is skipped. Newer successors are tried first; a successor left with no pooled token
// is dropped (a later close names it again if it is still needed). Pooling by range, not by the
// successor a close named, matters when a parent closes late against a newer topology (queued,
// or replayed after a restore): its tokens still complete whichever successor they tile, where
// an older successor would be read and answered with OUT_OF_RANGE and the current partitions.
// Ready partitions are handed out first in, first out. Not thread-safe (the coordinator thread).
class ChangeStreamLedger {
 public:
  ChangeStreamLedger() = default;
  explicit ChangeStreamLedger(BigtableChangeStreamEnumState state);

  // A fresh start: each initial partition from `start` (inclusive).
  void start_fresh(const std::vector<RowKeyRange>& partitions, absl::Time start);

  // A reader's progress on `split_id` (tokens and low watermark after what went downstream).
  void on_progress(const std::string& split_id, std::vector<PartitionToken> tokens,
                   absl::Time low_watermark);

  struct Released {
    int splits = 0;  // successors released from one parent's tokens (a move counts here)
    int merges = 0;  // successors released from several parents' tokens
    std::vector<std::string> ids;  // the successors released, now ready
  };
  // `split_id` closed. A close of a partition the ledger no longer holds is ignored (a restore
  // replayed it). A close with no token and no new partition ends the partition (an end time was
  // reached). INTERNAL, changing nothing, when the tokens do not tile the closed partition or a
  // token lies in none of the new partitions.
  absl::StatusOr<Released> on_close(const std::string& split_id, const PartitionClose& close);

  // Ready partition `split_id`, now held by `subtask`; nullopt when it is not ready.
  std::optional<BigtableChangeStreamSplit> take(const std::string& split_id, int subtask);
  // The oldest ready partition, now held by `subtask`; nullopt when none is ready.
  std::optional<BigtableChangeStreamSplit> take_ready(int subtask);
  // A reader failed alone: its partitions are ready again, from the ledger's position.
  void return_assigned(const std::vector<std::string>& split_ids);
  // After a restore: `held` are the splits the readers restored, by id, with their subtask.
  // Those the ledger knows stay with their reader at the reader's (newer) position; partitions
  // the ledger thought assigned that no reader holds are ready again from the ledger's
  // position. Returns the held ids the ledger does not know (their partition closed before the
  // coordinator's checkpoint): the readers drop them.
  std::set<std::string> reconcile(
      const std::map<std::string, std::pair<int, BigtableChangeStreamSplit>>& held);

  // Nothing left to read and no token waiting (a bounded read is complete).
  bool done() const { return entries_.empty() && pool_.empty(); }
  std::size_t ready() const { return ready_.size(); }
  std::size_t assigned() const { return entries_.size() - ready_.size(); }
  // Handed-over tokens waiting for their successor to be covered.
  std::size_t waiting_tokens() const { return pool_.size(); }
  // The oldest position (a partition's low watermark, or its start time before its first token;
  // a handed-over token's low watermark) and where it is; nullopt when there is none.
  std::optional<std::pair<RowKeyRange, absl::Time>> oldest_position() const;
  // Everything positioned before `cutoff` starts over at `restart_at` without tokens: each such
  // partition becomes a new split (a new id), each such handed-over token a split over its range
  // (read from a time, a range that no longer is a partition is answered with the current ones).
  // Returns the ids replaced (readers holding them must drop them).
  std::set<std::string> restart_expired(absl::Time cutoff, absl::Time restart_at);
  // The smallest low watermark among ready partitions.
  std::optional<absl::Time> oldest_ready() const;
  // Where the partitions and handed-over tokens do not tile the whole key space exactly (a
  // range nobody reads, or read twice), as a range; nullopt when they do. An unbounded read's
  // ledger always tiles it: a gap in a restored one means corrupt state.
  std::optional<RowKeyRange> first_gap() const;
  // Partitions held by `subtask`.
  int held_by(int subtask) const;
  BigtableChangeStreamEnumState state(bool started) const;

 private:
  struct Entry {
    BigtableChangeStreamSplit split;
    int subtask = -1;
  };
  std::string new_id(const RowKeyRange& range);
  void add_ready(const RowKeyRange& range, absl::Time start);
  void release(Released& released);

  std::map<std::string, Entry> entries_;  // by split id
  std::deque<std::string> ready_;
  std::vector<HandedOverToken> pool_;    // disjoint ranges
  std::vector<RowKeyRange> successors_;  // oldest first
  std::int64_t next_id_ = 1;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_LEDGER_H_
