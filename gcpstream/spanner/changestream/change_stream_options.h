#ifndef GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_OPTIONS_H_
#define GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_OPTIONS_H_

#include <chrono>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gcpstream/connector/start_position.h"
#include "gcpstream/spanner/changestream/change_stream_filter.h"
#include "google/spanner/v1/spanner.pb.h"

namespace gcpstream::spanner {

// Where a fresh change-stream read begins (shared with the Bigtable change stream source).
using ChangeStreamStartPosition = connector::StartPosition;

// The options of SpannerChangeStreamSource (names as in the spec's builder; defaults there).
struct SpannerChangeStreamOptions {
  ChangeStreamStartPosition start_position = ChangeStreamStartPosition::latest();
  // Where to start over when a restored ledger's positions fell out of the stream's retention.
  // Unset: such a restore fails. Set: the whole stale ledger is discarded and one new initial
  // query starts here — the changes in between are lost, and changes after it may repeat.
  std::optional<ChangeStreamStartPosition> resume_fallback;
  // Retention assumed when INFORMATION_SCHEMA.CHANGE_STREAM_OPTIONS has no retention_period
  // row (Spanner's default retention is one day; the spec's connector assumes 7 days). Must be
  // longer than the one-minute safety margin at the retention edge.
  absl::Duration absent_retention_fallback = absl::Hours(24 * 7);
  // How often a quiet partition reports a heartbeat: 1 s to 5 min (the range the spec allows).
  std::chrono::milliseconds heartbeat_interval{2000};
  google::spanner::v1::RequestOptions::Priority rpc_priority =
      google::spanner::v1::RequestOptions::PRIORITY_HIGH;
  // Partition queries one subtask runs at once; more assigned splits wait in a checkpointed
  // FIFO. Parallelism x this is the job's capacity (not a Spanner quota). 1 to
  // kMaxQueriesPerSubtask (100).
  int max_concurrent_queries_per_subtask = 8;
  ChangeStreamFilterOptions filters;

  // INVALID_ARGUMENT naming the option.
  absl::Status validate() const;
};

// The one-minute margin kept from the moving retention edge: a position closer than this to
// the edge counts as expired, since it may expire before the query reaches Spanner.
inline constexpr absl::Duration kRetentionSafetyMargin = absl::Minutes(1);

// Each running partition query holds one session of its reader's pool for its whole life, so a
// subtask runs at most as many as the pool holds (SessionPoolOptions::max_sessions, 100).
inline constexpr int kMaxQueriesPerSubtask = 100;

// INVALID_ARGUMENT unless `name` is a plain identifier (letters, digits, '_', starting with a
// letter), so it can be spliced into READ_<name> / spanner.read_json_<name>.
absl::Status ValidateChangeStreamName(std::string_view name);

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_OPTIONS_H_
