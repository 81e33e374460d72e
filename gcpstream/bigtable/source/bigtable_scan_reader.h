#ifndef GCPSTREAM_BIGTABLE_SOURCE_BIGTABLE_SCAN_READER_H_
#define GCPSTREAM_BIGTABLE_SOURCE_BIGTABLE_SCAN_READER_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "gcpstream/api/stream_thread_split_reader.h"
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
// finishes without a call, because an empty set reads the whole table). The stream thread
// (StreamThreadSplitReader) reassembles rows from cell chunks and hands them to fetch(), one
// fetch's worth at a time; it moves on to the next assigned split as soon as a stream ends,
// while fetch() still drains the previous one (a table the service keeps in many sections has many
// short splits). A transient failure opens the stream again just past the last complete row it
// received (or the service's last_scanned_row_key), dropping a partial row; a row the stream handed
// over is never asked for again while this reader lives. Any other failure fails the reader with
// its code, naming the range. Checkpoint progress is not kept here: the split state advances only
// when a row is emitted (BigtableSource's emitter).
class BigtableScanReader final : public StreamThreadSplitReader<BigtableRow, BigtableScanSplit> {
 public:
  BigtableScanReader(BigtableStubFactory stubs, BigtableScanRequest request);
  ~BigtableScanReader() override;

 private:
  absl::Status open() override;
  bool read_split(const BigtableScanSplit& split) override;

  BigtableStubFactory stubs_;
  const BigtableScanRequest request_;
  std::shared_ptr<google::bigtable::v2::Bigtable::StubInterface> stub_;  // set by open()
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_SOURCE_BIGTABLE_SCAN_READER_H_
