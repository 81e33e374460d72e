#ifndef GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_QUERY_READER_H_
#define GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_QUERY_READER_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "gcpstream/api/split_reader.h"
#include "gcpstream/spanner/changestream/change_stream_options.h"
#include "gcpstream/spanner/changestream/change_stream_record.h"
#include "gcpstream/spanner/changestream/change_stream_split.h"
#include "gcpstream/spanner/source/spanner_read_client.h"

namespace gcpstream::spanner {

// Runs the partition queries of one subtask, each on its own thread, all at once (the reader in
// front of it admits at most max_concurrent_queries_per_subtask). A query thread parses each
// result row into records and hands them over, then waits until fetch() took them: at most one
// row is buffered per query, and gRPC flow control holds Spanner back meanwhile.
//
// A query that ends OK after reporting its children finishes its split. One that ends OK
// without children is not finished: it is opened again at its position (counted by
// changeStreamQueryRestarts; three such ends in a row without progress fail the reader, as a
// service that keeps closing a partition is not something to spin on). A failure the data
// client could not resume fails the reader with its code; the split stays in the checkpoint.
class ChangeStreamQueryReader final
    : public SplitReader<ChangeStreamRecord, ChangeStreamPartitionSplit> {
 public:
  ChangeStreamQueryReader(std::shared_ptr<SpannerReadClient> client, std::string stream,
                          SpannerChangeStreamOptions options,
                          std::shared_ptr<std::atomic<int>> dialect, Counter& restarts);
  ~ChangeStreamQueryReader() override;

  absl::StatusOr<RecordsWithSplitIds<ChangeStreamRecord>> fetch() override;
  absl::Status handle_splits_addition(SplitsAddition<ChangeStreamPartitionSplit> addition) override;
  void wake_up() override;
  absl::Status close() override;

 private:
  struct Query {
    ChangeStreamPartitionSplit split;  // position: the last record handed over
    std::thread thread;
    std::unique_ptr<ReadCancellation> cancel;
    std::deque<ChangeStreamRecord> records;
    bool saw_children = false;
    bool done = false;
    absl::Time opened_at;  // the position the query was (re)opened at
    absl::Status status;
    int empty_ends = 0;
  };
  void open(Query& q);
  void stop_all();

  std::shared_ptr<SpannerReadClient> client_;
  const std::string stream_;
  const SpannerChangeStreamOptions options_;
  std::shared_ptr<std::atomic<int>> dialect_;
  Counter& restarts_;
  std::map<std::string, std::unique_ptr<Query>> queries_;  // fetcher thread only (the map)

  std::mutex mu_;  // guards each Query's records/done/status/split and the flags below
  std::condition_variable cv_;
  bool woken_ = false;
  bool closing_ = false;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_QUERY_READER_H_
