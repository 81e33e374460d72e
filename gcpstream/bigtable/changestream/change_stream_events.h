#ifndef GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_EVENTS_H_
#define GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_EVENTS_H_

#include <set>
#include <string>
#include <vector>

#include "gcpstream/api/source_event.h"
#include "gcpstream/bigtable/changestream/change_stream_ledger.h"
#include "gcpstream/bigtable/changestream/change_stream_split.h"

namespace gcpstream::bigtable {

// Reader -> coordinator: the reader started holding these (restored) splits; it opens no
// stream before the coordinator's release.
struct BigtableChangeStreamHello final : SourceEvent {
  std::vector<BigtableChangeStreamSplit> held;
};
// Coordinator -> reader: open streams. `drop`: restored splits whose partition the coordinator
// no longer holds (it closed before the coordinator's checkpoint), not to be read.
struct BigtableChangeStreamRelease final : SourceEvent {
  std::set<std::string> drop;
};
// Reader -> coordinator: a partition's position after what went downstream.
struct BigtableChangeStreamProgress final : SourceEvent {
  std::string split_id;
  std::vector<PartitionToken> tokens;
  absl::Time low_watermark;
};
// Reader -> coordinator: a partition's CloseStream went through the reader (after everything
// before it went downstream).
struct BigtableChangeStreamClosed final : SourceEvent {
  std::string split_id;
  PartitionClose close;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_EVENTS_H_
