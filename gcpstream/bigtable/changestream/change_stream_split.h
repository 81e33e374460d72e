#ifndef GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_SPLIT_H_
#define GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_SPLIT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gcpstream/api/versioned_serializer.h"
#include "gcpstream/bigtable/client/row_key_range.h"

namespace gcpstream::bigtable {

// A continuation token and the range it covers (StreamContinuationToken).
struct PartitionToken {
  RowKeyRange range;
  std::string token;
  friend bool operator==(const PartitionToken&, const PartitionToken&) = default;
};

// One change-stream partition as a split. It starts from `tokens` (one per piece of the
// partition, covering it exactly: one after a split or a read, several after a merge) or, with
// none, from `start_time` inclusively. `low_watermark` is the service's estimate at the
// position, never moving back. `id` is the coordinator's name for this partition's read, unique
// for the job (the same range read again after a split and a merge gets a new id).
struct BigtableChangeStreamSplit {
  std::string id;
  RowKeyRange partition;
  std::vector<PartitionToken> tokens;
  absl::Time start_time = absl::UnixEpoch();
  absl::Time low_watermark = absl::UnixEpoch();
  // Reader-side only: the partition's CloseStream was emitted (never checkpointed as true: a
  // closed split is finished before the next checkpoint could see it).
  bool closed = false;

  const std::string& split_id() const { return id; }
  friend bool operator==(const BigtableChangeStreamSplit&,
                         const BigtableChangeStreamSplit&) = default;
};

// A continuation token a closed partition handed over, waiting until the tokens handed over
// cover one of the successor partitions the closes named.
struct HandedOverToken {
  PartitionToken token;
  absl::Time low_watermark = absl::UnixEpoch();
  std::string parent;  // the closed split's id
  friend bool operator==(const HandedOverToken&, const HandedOverToken&) = default;
};

// What the coordinator checkpoints.
struct BigtableChangeStreamEnumState {
  bool started = false;  // the initial partitions were listed
  struct Entry {
    BigtableChangeStreamSplit split;
    int subtask = -1;  // -1: not assigned
    friend bool operator==(const Entry&, const Entry&) = default;
  };
  std::vector<Entry> entries;
  std::vector<HandedOverToken> tokens;  // handed over, not yet part of a released successor
  std::vector<RowKeyRange> successors;  // named by closes, oldest first
  std::int64_t next_id = 1;
  friend bool operator==(const BigtableChangeStreamEnumState&,
                         const BigtableChangeStreamEnumState&) = default;
};

// JSON, version 1; keys and tokens in base64, times as microseconds. DATA_LOSS for bytes that do
// not parse or describe an impossible split (a token outside its partition).
class BigtableChangeStreamSplitSerializer final
    : public VersionedSerializer<BigtableChangeStreamSplit> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const BigtableChangeStreamSplit& split) const override;
  absl::StatusOr<BigtableChangeStreamSplit> deserialize(int version,
                                                        std::string_view bytes) const override;
};

class BigtableChangeStreamEnumStateSerializer final
    : public VersionedSerializer<BigtableChangeStreamEnumState> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const BigtableChangeStreamEnumState& state) const override;
  absl::StatusOr<BigtableChangeStreamEnumState> deserialize(int version,
                                                            std::string_view bytes) const override;
};

// Whether `tokens` tile `range` exactly (sorted by start, no gap, no overlap).
bool TokensCover(std::vector<PartitionToken> tokens, const RowKeyRange& range);
// Whether `inner` lies within `outer`.
bool RangeContains(const RowKeyRange& outer, const RowKeyRange& inner);

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_SPLIT_H_
