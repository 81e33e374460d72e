#ifndef GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_SPLIT_H_
#define GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_SPLIT_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gcpstream/api/versioned_serializer.h"

namespace gcpstream::spanner {

// One change-stream partition as a split. The initial query (the null partition token) has an
// empty token. `position` is the greatest commit or heartbeat timestamp the reader consumed
// (initially `start`); a query is (re)opened at `position`, inclusively, because several records
// can share one commit timestamp: records at that timestamp may come again, none is skipped.
struct ChangeStreamPartitionSplit {
  std::string token;
  absl::Time start = absl::UnixEpoch();
  absl::Time position = absl::UnixEpoch();
  std::vector<std::string> parent_tokens;

  std::string split_id() const;
  friend bool operator==(const ChangeStreamPartitionSplit&,
                         const ChangeStreamPartitionSplit&) = default;
};

// The split id of the partition with `token` that starts at `start`.
std::string ChangeStreamSplitId(const std::string& token, absl::Time start);

// One partition of the coordinator's ledger.
struct ChangeStreamLedgerEntry {
  enum class State {
    kWaiting,   // discovered; some parent it names has not finished
    kReady,     // may be assigned
    kAssigned,  // a reader holds it
    kFinished,  // finished; kept only as proof for a child still waiting for other parents
  };
  ChangeStreamPartitionSplit split;
  State state = State::kReady;
  int subtask = -1;  // kAssigned: the reader
  friend bool operator==(const ChangeStreamLedgerEntry&, const ChangeStreamLedgerEntry&) = default;
};

// What the coordinator checkpoints: the unfinished partitions (and the finished-parent proofs
// a waiting child still needs), never the whole history. Empty `entries` with `started` false
// is a source that has not resolved its start position yet.
struct ChangeStreamEnumState {
  bool started = false;
  std::vector<ChangeStreamLedgerEntry> entries;
  std::int64_t emitted_watermark_ms = 0;
};

// JSON, version 1; timestamps as RFC 3339 with nanoseconds. DATA_LOSS for bytes that do not
// parse.
class ChangeStreamSplitSerializer final : public VersionedSerializer<ChangeStreamPartitionSplit> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const ChangeStreamPartitionSplit& split) const override;
  absl::StatusOr<ChangeStreamPartitionSplit> deserialize(int version,
                                                         std::string_view bytes) const override;
};

class ChangeStreamEnumStateSerializer final : public VersionedSerializer<ChangeStreamEnumState> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const ChangeStreamEnumState& state) const override;
  absl::StatusOr<ChangeStreamEnumState> deserialize(int version,
                                                    std::string_view bytes) const override;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_SPLIT_H_
