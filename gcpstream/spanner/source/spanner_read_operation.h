#ifndef GCPSTREAM_SPANNER_SOURCE_SPANNER_READ_OPERATION_H_
#define GCPSTREAM_SPANNER_SOURCE_SPANNER_READ_OPERATION_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gcpstream/spanner/client/value.h"
#include "google/spanner/v1/spanner.pb.h"

namespace gcpstream::spanner {

// What a SpannerSource reads: a query, or a table read (optionally through a secondary index),
// never both. A query must be root-partitionable (Spanner partitions it only when its plan
// starts with a distributed union: one table scan with predicates and projections, no
// aggregate, no ORDER BY, no LIMIT); the service refuses any other when the source plans, and
// that refusal is returned unchanged because its text says what to change.
class SpannerReadOperation {
 public:
  enum class Kind { kQuery, kRead };

  // A query with named parameters ("@id" in GoogleSQL, "$1" in PostgreSQL, bound as "p1").
  static SpannerReadOperation query(std::string sql, std::map<std::string, Value> params = {});
  // The rows of `table` whose primary key is in `key_set` (default: all rows), `columns` only.
  static SpannerReadOperation read(std::string table, std::vector<std::string> columns,
                                   google::spanner::v1::KeySet key_set = AllKeys());
  // The same through `index`, with `key_set` in the index's key space. A column the index does
  // not store costs a lookup in the base table per row.
  static SpannerReadOperation read_using_index(std::string table, std::string index,
                                               std::vector<std::string> columns,
                                               google::spanner::v1::KeySet key_set = AllKeys());
  static google::spanner::v1::KeySet AllKeys();

  Kind kind() const { return kind_; }
  const std::string& sql() const { return sql_; }
  const std::string& table() const { return table_; }
  const std::string& index() const { return index_; }
  const std::vector<std::string>& columns() const { return columns_; }

  // INVALID_ARGUMENT: an empty query, table or column list, an empty column or parameter name.
  absl::Status validate() const;

  // The PartitionQuery / PartitionRead request (session and transaction filled in by the
  // caller) and the matching streaming request for one partition; see the ".cc".
  google::spanner::v1::PartitionQueryRequest partition_query_request() const;
  google::spanner::v1::PartitionReadRequest partition_read_request() const;
  google::spanner::v1::ExecuteSqlRequest execute_request() const;
  google::spanner::v1::ReadRequest read_request() const;

 private:
  Kind kind_ = Kind::kQuery;
  std::string sql_;
  std::map<std::string, Value> params_;
  std::string table_;
  std::string index_;
  std::vector<std::string> columns_;
  google::spanner::v1::KeySet key_set_;
};

// The snapshot a batch read runs at. A batch read is a multi-use read-only transaction (every
// partition rejoins it), so only the three bounds Spanner allows there can be built into a
// source; the two single-use-only bounds exist so that choosing them gives a clear error.
class TimestampBound {
 public:
  enum class Mode { kStrong, kReadTimestamp, kExactStaleness, kMaxStaleness, kMinReadTimestamp };
  // The latest committed data when the read is planned (the default).
  static TimestampBound strong() { return TimestampBound(Mode::kStrong); }
  static TimestampBound read_timestamp(absl::Time t);
  // The data as of `staleness` before the read is planned (≥ 0, whole microseconds or coarser).
  static TimestampBound exact_staleness(std::chrono::microseconds staleness);
  // Single-use only; a SpannerSource refuses them at build().
  static TimestampBound max_staleness(std::chrono::microseconds staleness);
  static TimestampBound min_read_timestamp(absl::Time t);

  Mode mode() const { return mode_; }
  // INVALID_ARGUMENT for the single-use-only modes, a negative staleness and a read timestamp
  // more than an hour in the future (Spanner would wait for it).
  absl::Status validate_for_batch_read() const;
  // The read-only options of the batch transaction (return_read_timestamp set).
  google::spanner::v1::TransactionOptions transaction_options() const;
  std::string to_string() const;

 private:
  explicit TimestampBound(Mode mode) : mode_(mode) {}
  Mode mode_;
  absl::Time timestamp_ = absl::InfinitePast();
  std::chrono::microseconds staleness_{0};
};

// The options of a SpannerSource besides what it reads (options-spanner.md, the source table).
struct SpannerSourceOptions {
  TimestampBound timestamp_bound = TimestampBound::strong();
  // Hints to PartitionQuery/PartitionRead; the service may return more or fewer partitions (and
  // the emulator ignores both). Unset: the service decides. When set, ≥ 1.
  std::optional<std::int64_t> max_partitions;
  std::optional<std::int64_t> partition_size_bytes;
  // Runs the partition reads on Data Boost's own compute (needs spanner.databases.useDataBoost;
  // billed separately; its concurrency quota can answer RESOURCE_EXHAUSTED).
  bool data_boost_enabled = false;
  // Priority of the reads that move the rows (not of the planning call). Unspecified is what
  // Spanner treats as HIGH.
  google::spanner::v1::RequestOptions::Priority rpc_priority =
      google::spanner::v1::RequestOptions::PRIORITY_UNSPECIFIED;
  // Fetch hand-off bounds: at most this many rows, and about this many bytes of decoded field
  // content, go from the reading thread to the subtask in one batch (whichever is reached
  // first; a single larger row goes alone). Spec defaults: 1,000 rows, 12 MiB.
  int max_rows_per_fetch = 1000;
  std::size_t max_bytes_per_fetch = 12u << 20;

  // INVALID_ARGUMENT naming the option out of range.
  absl::Status validate() const;
};

// Bytes of decoded content of a wire value of `type`, as the fetch bound counts them: UTF-8
// bytes of text (STRING, JSON, NUMERIC, DATE, TIMESTAMP as sent), the payload of BYTES and
// PROTO (3/4 of the base64), 8 for a number or a bool, the sum over an array's elements or a
// struct's fields; 0 for NULL.
std::size_t EstimatedValueBytes(const google::spanner::v1::Type& type,
                                const google::protobuf::Value& value);

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_SOURCE_SPANNER_READ_OPERATION_H_
