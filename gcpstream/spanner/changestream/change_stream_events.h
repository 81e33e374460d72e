#ifndef GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_EVENTS_H_
#define GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_EVENTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gcpstream/api/source_event.h"
#include "gcpstream/spanner/changestream/change_stream_record.h"
#include "gcpstream/spanner/changestream/change_stream_split.h"
#include "gcpstream/spanner/client/value.h"

namespace gcpstream::spanner {

// Reader -> coordinator: the reader started and holds these (restored) splits; it opens no
// query before ChangeStreamRelease.
struct ChangeStreamReaderHello final : SourceEvent {
  std::vector<ChangeStreamPartitionSplit> held;
};
// Reader -> coordinator: a partition reported its children (after the record was consumed).
struct ChangeStreamChildrenReported final : SourceEvent {
  std::string split_id;
  ChildPartitionsRecord record;
};
// Reader -> coordinator: a partition's records up to `position` went downstream.
struct ChangeStreamProgress final : SourceEvent {
  std::string split_id;
  absl::Time position;
};
// Reader -> coordinator: a partition's query ended after reporting its children.
struct ChangeStreamPartitionFinished final : SourceEvent {
  std::string split_id;
};

// Coordinator -> readers: the startup (and restore) checks passed; open queries. With
// `discard_held` the restored splits are dropped (resume_fallback replaced the ledger).
struct ChangeStreamRelease final : SourceEvent {
  bool discard_held = false;
  Dialect dialect = Dialect::kGoogleSql;
};
// Coordinator -> readers: the source watermark (ms since the epoch), the same for every reader.
struct ChangeStreamWatermark final : SourceEvent {
  std::int64_t watermark_ms = 0;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_EVENTS_H_
