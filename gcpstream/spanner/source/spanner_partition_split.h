#ifndef GCPSTREAM_SPANNER_SOURCE_SPANNER_PARTITION_SPLIT_H_
#define GCPSTREAM_SPANNER_SOURCE_SPANNER_PARTITION_SPLIT_H_

#include <string>
#include <vector>

#include "gcpstream/api/versioned_serializer.h"

namespace gcpstream::spanner {

// The batch read-only transaction every partition of one SpannerSource rejoins: the session it
// lives on, its id, and the snapshot timestamp it reads at (RFC 3339, UTC).
struct BatchTransactionRef {
  std::string session;
  std::string transaction_id;  // bytes
  std::string read_timestamp;
  friend bool operator==(const BatchTransactionRef&, const BatchTransactionRef&) = default;
};

// One partition of the read, as Spanner planned it. A partition is the unit of progress and of
// re-reading: it has no position inside it to resume at (a partitioned query's row order is not
// contractual), so a checkpoint keeps the partitions a reader still holds and a restore reads
// each of them again from its start, in the same transaction, at the same timestamp.
struct SpannerPartitionSplit {
  int index = 0;                // 0 .. partitions-1, in the order Spanner returned them
  std::string partition_token;  // bytes
  BatchTransactionRef transaction;
  // Whether rows of this partition had been emitted when the checkpoint was taken (a restore
  // then emits them again: counted by partitionsReread).
  bool started = false;

  std::string split_id() const { return "partition-" + std::to_string(index); }
  friend bool operator==(const SpannerPartitionSplit&, const SpannerPartitionSplit&) = default;
};

// What the enumerator checkpoints: whether the read was planned, its transaction (so the
// snapshot timestamp survives a restore) and the partitions not yet handed to a reader. A
// partition neither here nor in a reader's state is finished; one that yielded no row is an
// ordinary finished partition.
struct SpannerSourceEnumState {
  bool planned = false;
  BatchTransactionRef transaction;
  int partition_count = 0;
  std::vector<SpannerPartitionSplit> unassigned;
};

// JSON; bytes fields in base64. Version 1. DATA_LOSS for bytes that do not parse.
class SpannerPartitionSplitSerializer final : public VersionedSerializer<SpannerPartitionSplit> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const SpannerPartitionSplit& split) const override;
  absl::StatusOr<SpannerPartitionSplit> deserialize(int version,
                                                    std::string_view bytes) const override;
};

class SpannerSourceEnumStateSerializer final : public VersionedSerializer<SpannerSourceEnumState> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const SpannerSourceEnumState& state) const override;
  absl::StatusOr<SpannerSourceEnumState> deserialize(int version,
                                                     std::string_view bytes) const override;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_SOURCE_SPANNER_PARTITION_SPLIT_H_
