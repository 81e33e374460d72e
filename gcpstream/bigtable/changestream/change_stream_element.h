#ifndef GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_ELEMENT_H_
#define GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_ELEMENT_H_

#include <cstddef>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gcpstream/bigtable/changestream/change_stream_mutation.h"
#include "gcpstream/bigtable/changestream/change_stream_split.h"

namespace gcpstream::bigtable {

// What a ReadChangeStream call hands from the fetcher to the subtask: a complete mutation, a
// heartbeat or the partition's CloseStream, each with the position after it.
struct ChangeStreamElement {
  enum class Kind { kMutation, kHeartbeat, kClose };
  Kind kind = Kind::kHeartbeat;
  std::optional<BigtableChangeStreamMutation> mutation;  // kMutation
  // kMutation, kHeartbeat: the partition's position after this element (one token for the
  // partition read). kClose: the tokens for the successor partitions' pieces.
  std::vector<PartitionToken> tokens;
  absl::Time low_watermark = absl::UnixEpoch();
  // kClose
  absl::Status close_status;
  std::vector<RowKeyRange> new_partitions;
  // What it counts against the subtask's handover budget (set by the stream reader).
  std::size_t handover_bytes = 0;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_ELEMENT_H_
