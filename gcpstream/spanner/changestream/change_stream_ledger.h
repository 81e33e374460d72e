#ifndef GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_LEDGER_H_
#define GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_LEDGER_H_

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gcpstream/spanner/changestream/change_stream_record.h"
#include "gcpstream/spanner/changestream/change_stream_split.h"

namespace gcpstream::spanner {

// The coordinator's partition lineage: every unfinished partition of a change stream (waiting
// for parents, ready, or held by a reader), plus finished parents kept only as long as a
// discovered child still waits for another parent. A child becomes ready only when every
// parent it names is in the ledger as finished: a parent the ledger does not know yet has not
// been read (a parent reports its children before it ends, so a finished parent's proof is
// still here while any child waits). A child that names no parent (the initial query's) waits
// for the partition that reported it. So a child is never read before all of its parents, and
// a finished child cannot be reported again (its parents are finished for good). Ready
// partitions are handed out first in, first out. Not thread-safe (the coordinator thread).
class ChangeStreamLedger {
 public:
  ChangeStreamLedger() = default;
  explicit ChangeStreamLedger(std::vector<ChangeStreamLedgerEntry> entries);

  // A fresh ledger: one initial (null-token) query at `start`.
  void start_fresh(absl::Time start);

  // `parent_id` reported children. Known children are ignored (the record repeats after a
  // restore, and both parents of a merge report the same child). Returns how many are new.
  int on_children(const std::string& parent_id, const ChildPartitionsRecord& record);
  // `split_id` consumed everything up to `position` (a heartbeat or a record).
  void on_progress(const std::string& split_id, absl::Time position);
  // `split_id`'s query ended after reporting its children. Children whose parents have all
  // finished become ready; proofs nobody needs are dropped.
  void on_finished(const std::string& split_id);

  // The oldest ready partition, now held by `subtask`; nullopt when none is ready.
  std::optional<ChangeStreamPartitionSplit> take_ready(int subtask);
  // After a restore: `held` are the split ids the readers restored (with their subtask).
  // Partitions the ledger thought assigned that no reader holds go back to ready (their
  // assignment or their finish happened after the coordinator's checkpoint), from the ledger's
  // position — an earlier one than the reader had, so nothing is skipped.
  void reconcile(const std::map<std::string, std::pair<int, ChangeStreamPartitionSplit>>& held);

  // A reader failed alone: these partitions it held are ready again, from the ledger's
  // position.
  void return_assigned(const std::vector<std::string>& split_ids);

  // The smallest position over every unfinished partition (waiting, ready or assigned);
  // nullopt when there is none.
  std::optional<absl::Time> low_watermark() const;
  // The oldest position among ready (unassigned) partitions / among assigned ones.
  std::optional<absl::Time> oldest_ready() const;
  std::optional<absl::Time> oldest_assigned() const;

  std::size_t unfinished() const;
  std::size_t count(ChangeStreamLedgerEntry::State state) const;
  std::vector<ChangeStreamLedgerEntry> entries() const;
  // Whether `split_id` is an unfinished partition the ledger holds.
  bool holds(const std::string& split_id) const;

 private:
  void promote_waiting();
  void drop_unneeded_proofs();
  bool finished(const std::string& token) const;

  std::map<std::string, ChangeStreamLedgerEntry> entries_;  // by split id
  std::deque<std::string> ready_;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_LEDGER_H_
