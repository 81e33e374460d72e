#ifndef GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_STREAM_READER_H_
#define GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_STREAM_READER_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "gcpstream/api/metrics.h"
#include "gcpstream/api/split_reader.h"
#include "gcpstream/bigtable/changestream/change_stream_element.h"
#include "gcpstream/bigtable/changestream/change_stream_split.h"
#include "gcpstream/bigtable/client/blocking_stub.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"

namespace gcpstream::bigtable {

// What every ReadChangeStream of one source asks for.
struct ChangeStreamRequestBase {
  std::string table_name;  // projects/P/instances/I/tables/T
  std::string app_profile_id;
  std::optional<absl::Time> end_time;
  std::chrono::milliseconds heartbeat{5000};
};

// Runs the ReadChangeStream calls of one subtask, one thread each (the reader in front admits
// at most max_concurrent_streams_per_subtask). A call has no deadline: an idle partition's
// stream stays open for as long as it is idle, and only heartbeats show it is alive.
//
// A call thread reassembles DataChange messages into mutations and hands each element over. It
// waits for fetch() while its partition has kHandover elements waiting or the subtask's
// elements hold kHandoverBytes (one shared budget; an element is always let through when
// nothing waits), so gRPC flow control then holds the service back. A CloseStream finishes the
// split. A call that fails with a transient code (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED,
// RESOURCE_EXHAUSTED, INTERNAL) or ends without a CloseStream is opened again from the last
// complete element's token, after a backoff (100 ms doubling to 5 s; reset by progress); a partly
// received change is dropped and comes again. Any other code fails the reader with its code.
//
// Stall: a call that received nothing (not even a heartbeat) for four heartbeat intervals, at
// least 2 s, while not held back by the handover, is cancelled and opened again from its last
// token (a network or service stall must not silently stop a partition).
//
// Rotation: while request_rotation() credits remain, the next call to receive a heartbeat —
// or a complete mutation once it has been open for two heartbeat intervals, so a busy partition
// that sends no heartbeat makes way too — ends there and its split finishes unclosed, for the
// reader to queue it behind the partitions waiting for a slot.
class ChangeStreamStreamReader final
    : public SplitReader<ChangeStreamElement, BigtableChangeStreamSplit> {
 public:
  static constexpr std::size_t kHandover = 64;
  static constexpr std::size_t kHandoverBytes = 64 << 20;

  // What the reader's gauges show, refreshed by fetch() at least once a second.
  struct Liveness {
    std::atomic<int> open_calls{0};
    std::atomic<int> missed_heartbeat_intervals{0};
  };

  ChangeStreamStreamReader(BigtableStubFactory stubs, ChangeStreamRequestBase request,
                           Counter& reads_started,
                           std::shared_ptr<Liveness> liveness = std::make_shared<Liveness>());
  ~ChangeStreamStreamReader() override;

  absl::StatusOr<RecordsWithSplitIds<ChangeStreamElement>> fetch() override;
  absl::Status handle_splits_addition(SplitsAddition<BigtableChangeStreamSplit> addition) override;
  void wake_up() override;
  absl::Status close() override;

  // Thread-safe: `n` partitions wait for a slot; as many open streams (less those already
  // rotating) may make way.
  void request_rotation(int n);
  // Thread-safe: ReadChangeStream calls open now (not those waiting to reopen).
  int open_calls() const;

 private:
  struct Stream {
    BigtableChangeStreamSplit split;  // the position of the last complete element read
    std::thread thread;
    grpc::ClientContext* context = nullptr;  // of the current call; guarded by mu_
    std::deque<ChangeStreamElement> elements;
    bool done = false;
    bool rotated = false;
    bool stalled = false;       // cancelled by the stall check
    bool handing_over = false;  // waiting for fetch() to take its elements
    absl::Status status;
  };
  void run(Stream& s);
  absl::Status read_once(Stream& s, bool& finished, bool& progressed);
  // Takes one rotation credit, if any is left.
  bool take_rotation();
  void stop_all();
  // Under mu_: cancels stalled calls and refreshes the liveness figures.
  void check_liveness();

  BigtableStubFactory stubs_;
  std::shared_ptr<google::bigtable::v2::Bigtable::StubInterface> stub_;
  const ChangeStreamRequestBase request_;
  Counter& reads_started_;
  std::shared_ptr<Liveness> liveness_;
  std::map<std::string, std::unique_ptr<Stream>> streams_;  // fetcher thread only (the map)

  mutable std::mutex
      mu_;  // guards each Stream's elements/done/status/context, and the fields below
  std::condition_variable cv_;
  bool woken_ = false;
  bool closing_ = false;
  int rotations_ = 0;  // credits: streams that may still rotate
  int rotating_ = 0;   // streams that rotated and were not reported finished yet
  std::size_t buffered_bytes_ = 0;
  int open_calls_ = 0;
  // When each open stream last received a message.
  std::map<std::string, std::chrono::steady_clock::time_point> last_message_;
};

// google.bigtable.v2.ReadChangeStreamRequest for `split` (start time or tokens).
google::bigtable::v2::ReadChangeStreamRequest BuildReadChangeStreamRequest(
    const ChangeStreamRequestBase& base, const BigtableChangeStreamSplit& split);
google::bigtable::v2::StreamPartition PartitionToProto(const RowKeyRange& range);
RowKeyRange PartitionFromProto(const google::bigtable::v2::StreamPartition& partition);

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_STREAM_READER_H_
