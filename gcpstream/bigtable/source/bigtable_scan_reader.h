#ifndef GCPSTREAM_BIGTABLE_SOURCE_BIGTABLE_SCAN_READER_H_
#define GCPSTREAM_BIGTABLE_SOURCE_BIGTABLE_SCAN_READER_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "gcpstream/api/fetch_handoff.h"
#include "gcpstream/api/split_reader.h"
#include "gcpstream/bigtable/client/blocking_stub.h"
#include "gcpstream/bigtable/source/bigtable_scan_split.h"
#include "gcpstream/bigtable/source/read_rows_assembler.h"

namespace gcpstream::bigtable {

// What every ReadRows of one scan asks for, and the fetch bounds.
struct BigtableScanRequest {
  std::string table_name;  // projects/P/instances/I/tables/T
  std::string app_profile_id;
  std::optional<google::bigtable::v2::RowFilter> filter;
  // One fetch hands at most this many rows, and targets at most this many bytes of
  // BigtableRow::estimated_bytes() (a larger row goes alone) [1,000 rows, 8 MiB].
  int max_rows_per_fetch = 1000;
  std::size_t max_bytes_per_fetch = 8 << 20;
  // Transient failures (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, a stream that ends mid-row)
  // re-open the stream after a backoff from `initial_backoff`, doubling to 5 s, reset by a row;
  // this many in a row without a row in between fail the reader with the last one [10, 100 ms].
  int max_attempts_without_progress = 10;
  std::chrono::milliseconds initial_backoff{100};
  // A stream that delivers nothing for this long while the reader waits on it (not while the
  // hand-off is full) is cancelled and opened again past its last complete row, as a transient
  // failure [60 s]: a stalled connection must not hang the scan.
  std::chrono::milliseconds stall_timeout{std::chrono::seconds(60)};
};

// Reads the splits assigned to one subtask, one after the other, each with one ReadRows stream
// over what is left of its range (never an empty row set: a split whose range is used up
// finishes without a call, because an empty set reads the whole table). One stream thread,
// started with the first split and kept for the reader's life, reassembles rows from cell
// chunks and hands them to fetch() through a FetchHandoff bounded by one fetch's worth; it
// moves on to the next assigned split as soon as a stream ends, while fetch() still drains the
// previous one (a table the service keeps in many sections has many short splits). A transient
// failure opens the stream again just past the last complete row it received (or the service's
// last_scanned_row_key), dropping a partial row; a row the stream handed over is never asked
// for again while this reader lives. Any other failure fails the reader with its code, naming
// the range. Checkpoint progress is not kept here: the split state advances only when a row is
// emitted (BigtableSource's emitter).
class BigtableScanReader final : public SplitReader<BigtableRow, BigtableScanSplit> {
 public:
  BigtableScanReader(BigtableStubFactory stubs, BigtableScanRequest request);
  ~BigtableScanReader() override;

  absl::StatusOr<RecordsWithSplitIds<BigtableRow>> fetch() override;
  absl::Status handle_splits_addition(SplitsAddition<BigtableScanSplit> addition) override;
  void wake_up() override;
  absl::Status close() override;

 private:
  // What the stream thread hands over: a row of a split, or the end of a split (`row` empty)
  // with how its read ended.
  struct Item {
    std::string split_id;
    std::optional<BigtableRow> row;
    absl::Status end;
  };

  void run();
  // The stall watchdog's loop (see reading_since_).
  void watch();
  // Reads one split to its end; false when the reader is closing.
  bool read(const BigtableScanSplit& split);
  void stop_stream();
  bool closing() const;

  BigtableStubFactory stubs_;
  const BigtableScanRequest request_;
  std::shared_ptr<google::bigtable::v2::Bigtable::StubInterface> stub_;  // set before the thread
  std::thread stream_thread_;
  FetchHandoff<Item> handoff_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<BigtableScanSplit> pending_;  // assigned, not yet read by the stream thread
  bool closing_ = false;
  grpc::ClientContext* call_ = nullptr;  // the stream thread's open call, for close() to cancel
  // Stall watch: while the stream thread waits in Read(), when it started waiting; the watchdog
  // cancels the call once that is stall_timeout ago and marks it stalled.
  std::optional<std::chrono::steady_clock::time_point> reading_since_;
  bool stalled_ = false;
  std::thread watchdog_;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_SOURCE_BIGTABLE_SCAN_READER_H_
