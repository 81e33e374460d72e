#ifndef GCPSTREAM_BIGQUERY_SOURCE_READ_STREAM_SPLIT_H_
#define GCPSTREAM_BIGQUERY_SOURCE_READ_STREAM_SPLIT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gcpstream/api/versioned_serializer.h"

namespace gcpstream::bigquery {

// One ReadStream of the read session and how many of its rows were consumed: a restore
// re-issues ReadRows at `offset`, the API's own resume point. The split id is the stream's name
// (projects/P/locations/L/sessions/S/streams/X). `offset` advances once per input row whose
// records all reached downstream, whatever number of records it made. A split restored at
// exactly the stream's row count reads nothing and finishes (the service answers such a read
// with no rows and no error).
struct ReadStreamSplit {
  std::string stream;
  std::int64_t offset = 0;
  // The session's Avro schema (JSON) and when the service will expire the session (µs since the
  // epoch; 0 unknown): what a reader needs without asking the enumerator, and what names an
  // expired session in the failure.
  std::string avro_schema;
  std::int64_t session_expire_micros = 0;

  const std::string& split_id() const { return stream; }
  friend bool operator==(const ReadStreamSplit&, const ReadStreamSplit&) = default;
};

// What the enumerator checkpoints. `session` set means the read session exists: a restore
// adopts it and never creates a second one (a second session would pin a second snapshot of
// the table). `unassigned` are its streams not yet handed to a reader. `query_job` is the query
// job a query source ran (empty for a table), so a restore never runs the query again.
// The session's Avro schema and expiry are kept once here, not per unassigned split (a session
// may have thousands of streams); splits read back carry them again.
struct BigQueryReadEnumState {
  std::string session;
  std::int64_t stream_count = 0;
  std::vector<ReadStreamSplit> unassigned;
  std::string query_job;
  std::string read_table;    // projects/P/datasets/D/tables/T the session reads
  std::string read_options;  // what the session was asked for (DescribeReadSession)
  std::string avro_schema;
  std::int64_t session_expire_micros = 0;
  friend bool operator==(const BigQueryReadEnumState&, const BigQueryReadEnumState&) = default;
};

// Version 1, binary (length-prefixed strings). DATA_LOSS for bytes that do not parse (truncated,
// trailing bytes, a negative offset or count, a split without a stream name); FAILED_PRECONDITION
// for an unknown version.
class ReadStreamSplitSerializer final : public VersionedSerializer<ReadStreamSplit> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const ReadStreamSplit& split) const override;
  absl::StatusOr<ReadStreamSplit> deserialize(int version, std::string_view bytes) const override;
};

class BigQueryReadEnumStateSerializer final : public VersionedSerializer<BigQueryReadEnumState> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const BigQueryReadEnumState& state) const override;
  absl::StatusOr<BigQueryReadEnumState> deserialize(int version,
                                                    std::string_view bytes) const override;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SOURCE_READ_STREAM_SPLIT_H_
