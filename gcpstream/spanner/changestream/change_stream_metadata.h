#ifndef GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_METADATA_H_
#define GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_METADATA_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gcpstream/spanner/changestream/change_stream_split.h"
#include "gcpstream/spanner/client/data_client.h"
#include "gcpstream/spanner/client/value.h"

namespace gcpstream::spanner {

// What the coordinator learns about a change stream before it releases any reader.
struct ChangeStreamMetadata {
  Dialect dialect = Dialect::kGoogleSql;
  bool watches_all = false;                         // FOR ALL
  std::vector<std::string> tables;                  // watched tables (empty with FOR ALL)
  std::vector<std::string> explicit_column_tables;  // tables watched through a column list
  absl::Duration retention;
  bool retention_explicit = false;  // false: absent_retention_fallback was assumed
  std::string value_capture_type;   // "OLD_AND_NEW_VALUES" when the stream sets none
  std::string partition_mode;       // "IMMUTABLE_KEY_RANGE" when the stream sets none
  // Every other option the stream sets ("exclude_insert=true", "allow_txn_exclusion=true", ...).
  std::vector<std::string> other_options;

  // One line for the log: scope, retention, value capture type, partition mode, and the
  // other options (the exclusion options among them).
  std::string describe() const;
};

// Reads the dialect (INFORMATION_SCHEMA.DATABASE_OPTIONS) and the stream's rows of
// CHANGE_STREAMS, CHANGE_STREAM_TABLES and CHANGE_STREAM_OPTIONS (names compared as the dialect
// does: case-insensitively in GoogleSQL, exactly in PostgreSQL). NOT_FOUND naming the stream
// when it does not exist; FAILED_PRECONDITION for a partition mode other than
// IMMUTABLE_KEY_RANGE (the only one this source reads). Blocking.
absl::StatusOr<ChangeStreamMetadata> ReadChangeStreamMetadata(SpannerDataClient& client,
                                                              const std::string& stream,
                                                              absl::Duration absent_retention);

// FAILED_PRECONDITION naming the oldest position, its age and the retention when `oldest` lies
// beyond the retention edge (less the one-minute safety margin) at `now`.
absl::Status CheckWithinRetention(absl::Time oldest, absl::Time now,
                                  const ChangeStreamMetadata& metadata);

// The partition query of `split` in `dialect`: a single-use strong read-only ExecuteSqlRequest
// calling READ_<stream> (GoogleSQL) or spanner.read_json_<stream> (PostgreSQL) from the split's
// position, inclusive, with no end, the split's token (NULL for the initial query) and the
// heartbeat interval.
google::spanner::v1::ExecuteSqlRequest ChangeStreamQuery(
    Dialect dialect, const std::string& stream, const ChangeStreamPartitionSplit& split,
    std::chrono::milliseconds heartbeat, google::spanner::v1::RequestOptions::Priority priority);

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_METADATA_H_
