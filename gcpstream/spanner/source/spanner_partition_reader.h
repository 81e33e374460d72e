#ifndef GCPSTREAM_SPANNER_SOURCE_SPANNER_PARTITION_READER_H_
#define GCPSTREAM_SPANNER_SOURCE_SPANNER_PARTITION_READER_H_

#include <deque>
#include <memory>
#include <optional>
#include <thread>

#include "gcpstream/api/fetch_handoff.h"
#include "gcpstream/api/split_reader.h"
#include "gcpstream/spanner/client/row.h"
#include "gcpstream/spanner/source/spanner_partition_split.h"
#include "gcpstream/spanner/source/spanner_read_client.h"
#include "gcpstream/spanner/source/spanner_read_operation.h"

namespace gcpstream::spanner {

// Streams the partitions assigned to one subtask, one after the other, each with an
// ExecuteStreamingSql / StreamingRead that rejoins the batch transaction (session, transaction
// id, partition token; Data Boost and the rpcPriority as configured). A stream thread runs the
// read and hands rows to fetch() through a buffer bounded by one fetch's worth (maxRowsPerFetch
// rows or maxBytesPerFetch bytes, see EstimatedValueBytes); while the buffer is full the stream
// thread waits, and gRPC flow control holds the service back. fetch() returns at most one
// fetch's worth, at least one row when there is one (a single row above the byte bound goes
// alone), and marks the partition finished once its stream ended OK — also when it yielded no
// row. A wake_up() makes fetch() return early without disturbing the read, so no partition is
// re-read while the job runs. Transient failures are resumed by the data client; any other
// failure fails the reader with its code (a lost session as LostBatchTransactionError).
class SpannerPartitionReader final : public SplitReader<Row, SpannerPartitionSplit> {
 public:
  SpannerPartitionReader(std::shared_ptr<SpannerReadClient> client, SpannerReadOperation op,
                         SpannerSourceOptions options);
  ~SpannerPartitionReader() override;

  absl::StatusOr<RecordsWithSplitIds<Row>> fetch() override;
  absl::Status handle_splits_addition(SplitsAddition<SpannerPartitionSplit> addition) override;
  void wake_up() override;
  absl::Status close() override;

 private:
  void start_stream(const SpannerPartitionSplit& split);
  void stop_stream();
  absl::Status on_row(const google::spanner::v1::ResultSetMetadata& metadata,
                      std::vector<google::protobuf::Value> values);

  std::shared_ptr<SpannerReadClient> client_;
  const SpannerReadOperation op_;
  const SpannerSourceOptions options_;
  // Fetcher thread only.
  std::deque<SpannerPartitionSplit> pending_;
  std::optional<SpannerPartitionSplit> current_;
  std::thread stream_thread_;
  std::unique_ptr<ReadCancellation> cancel_;

  FetchHandoff<Row> handoff_;
  // Stream thread only: the column types of the current result, shared by its rows.
  const google::spanner::v1::ResultSetMetadata* last_metadata_ = nullptr;
  std::shared_ptr<const google::spanner::v1::StructType> columns_;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_SOURCE_SPANNER_PARTITION_READER_H_
