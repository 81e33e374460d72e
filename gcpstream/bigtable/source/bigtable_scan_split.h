#ifndef GCPSTREAM_BIGTABLE_SOURCE_BIGTABLE_SCAN_SPLIT_H_
#define GCPSTREAM_BIGTABLE_SOURCE_BIGTABLE_SCAN_SPLIT_H_

#include <string>
#include <vector>

#include "gcpstream/api/versioned_serializer.h"
#include "gcpstream/bigtable/client/row_key_range.h"

namespace gcpstream::bigtable {

// One piece of a bounded scan: a row-key range, and it is the work that is left. A reader
// narrows `range` to start just past each row it emits, so a checkpoint holds what is still to
// read and a restore resumes after the last emitted row instead of reading the piece again. A
// split whose range is empty is finished (it is never read: an empty row set would read the
// whole table). `id` is the planner's name for the piece ("range-N"), stable across restores.
struct BigtableScanSplit {
  std::string id;
  RowKeyRange range;

  const std::string& split_id() const { return id; }
  friend bool operator==(const BigtableScanSplit&, const BigtableScanSplit&) = default;
};

// The pieces of the configured ranges, cut at every SampleRowKeys key strictly inside one
// (`ranges` normalized, see NormalizeRanges), named range-0 .. range-N-1 in key order.
std::vector<BigtableScanSplit> PlanScanSplits(const std::vector<RowKeyRange>& ranges,
                                              std::vector<std::string> sample_keys);

// What the enumerator checkpoints: whether the table was sampled (a restore never samples
// again: the readers hold split ids of the first plan), how many pieces that made, and those
// not yet handed to a reader.
struct BigtableScanEnumState {
  bool planned = false;
  std::int64_t split_count = 0;
  std::vector<BigtableScanSplit> unassigned;
  // The normalized ranges the plan was made for: a restore with other ranges is refused (its
  // splits would read the old ones). Empty in version 1 state (not checked then).
  std::vector<RowKeyRange> ranges;
  friend bool operator==(const BigtableScanEnumState&, const BigtableScanEnumState&) = default;
};

// Version 1, binary (length-prefixed keys). DATA_LOSS for bytes that do not parse (truncated,
// trailing bytes, a negative count); FAILED_PRECONDITION for an unknown version. An empty range
// is valid state: the split's last row was emitted before its stream ended.
class BigtableScanSplitSerializer final : public VersionedSerializer<BigtableScanSplit> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const BigtableScanSplit& split) const override;
  absl::StatusOr<BigtableScanSplit> deserialize(int version, std::string_view bytes) const override;
};

// Version 2 adds the planned ranges; version 1 is still read.
class BigtableScanEnumStateSerializer final : public VersionedSerializer<BigtableScanEnumState> {
 public:
  int version() const override { return 2; }
  absl::StatusOr<std::string> serialize(const BigtableScanEnumState& state) const override;
  absl::StatusOr<BigtableScanEnumState> deserialize(int version,
                                                    std::string_view bytes) const override;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_SOURCE_BIGTABLE_SCAN_SPLIT_H_
