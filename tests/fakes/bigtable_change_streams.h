#ifndef GCPSTREAM_TESTS_FAKES_BIGTABLE_CHANGE_STREAMS_H_
#define GCPSTREAM_TESTS_FAKES_BIGTABLE_CHANGE_STREAMS_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"

namespace gcpstream::testing {

// How the fake behaves beyond the documented API. Every field can be changed while it runs.
struct BigtableChangeStreamsFakeOptions {
  // A SetCell value longer than this is sent as several chunks (ChunkInfo), each in its own
  // message of the same logical DataChange [1 MiB].
  std::size_t max_value_chunk_bytes = 1 << 20;
  // At most this many mutation chunks per message; more continue in CONTINUATION messages of
  // the same DataChange [0: no limit].
  int max_chunks_per_message = 0;
  // How far back a start time may reach; an older one answers INVALID_ARGUMENT [7 days, the
  // longest retention Bigtable allows].
  absl::Duration retention = absl::Hours(24 * 7);
  // Fault: heartbeats are not sent while true (data changes still are).
  bool pause_heartbeats = false;
  // Fault: the next DataChange sent as more than one message stops after its first message and
  // the stream fails with UNAVAILABLE (a stream cut mid-change). One-shot.
  bool cut_next_chunked_change = false;
  // The fake's notion of now (commit timestamps, heartbeats' low watermark, end times) [Now].
  std::function<absl::Time()> clock;
};

// An in-process Bigtable data service (google.bigtable.v2.Bigtable) serving change streams,
// which the Bigtable emulator cannot (it crashes on both change-stream RPCs,
// ../shared/notes/emulators.md). It follows the public v2 reference of
// GenerateInitialChangeStreamPartitions, ReadChangeStream, ReadChangeStreamResponse (DataChange,
// Heartbeat, CloseStream), StreamPartition and StreamContinuationToken(s). What it implements,
// each pinned by tests/integration/bigtable/bigtable_change_streams_fake_test.cc:
//  - MutateRow / MutateRows append to an in-memory change log (commit timestamps strictly
//    increasing, tiebreaker 0, source cluster "fake-c1"); nothing else is stored. A table must
//    have been added (NOT_FOUND otherwise);
//  - GenerateInitialChangeStreamPartitions streams the current partitions, which tile the key
//    space;
//  - ReadChangeStream from a start time (inclusive) or from continuation tokens whose partitions
//    must exactly cover the requested partition (INVALID_ARGUMENT otherwise); with neither it
//    starts at the end of the log. Each change of the partition's rows comes once, in commit
//    order, as a DataChange (first message: type, row key, commit time, tiebreaker, source
//    cluster; later ones CONTINUATION; the last with done, the token and the estimated low
//    watermark); SetCell values above max_value_chunk_bytes are chunked. A Heartbeat (token +
//    low watermark) every heartbeat_duration (default 5 s) while the stream is open; an idle
//    stream stays open however long it is idle;
//  - repartition: the partitions reading a range that changed get a CloseStream (status OK)
//    carrying a continuation token for each piece of their range under the new boundaries and
//    the new partitions overlapping it, after every change committed before the repartition. A
//    read of a partition that no longer exists gets a CloseStream with OUT_OF_RANGE, the new
//    partitions and the tokens for them;
//  - end_time: the stream ends with a CloseStream (OK, no tokens) once it has passed it;
//  - retention (BigtableChangeStreamsFakeOptions::retention): a start time older than it answers
//    INVALID_ARGUMENT (the reference: "must be within the change stream retention period"); a
//    token whose position is older answers OUT_OF_RANGE (the reference does not name the code:
//    this is the fake's choice);
//  - BigtableTableAdmin.GetTable reports the retention in Table.change_stream_config.
// Tokens are opaque strings of this fake. Thread-safe.
class BigtableChangeStreamsFake {
 public:
  using Mutation = google::bigtable::v2::Mutation;

  // Listens on `host`:`port` (0: any free port). One partition covers the whole key space.
  static absl::StatusOr<std::unique_ptr<BigtableChangeStreamsFake>> Start(
      BigtableChangeStreamsFakeOptions options = {}, int port = 0,
      const std::string& host = "127.0.0.1");
  ~BigtableChangeStreamsFake();

  std::string endpoint() const;
  void set_options(BigtableChangeStreamsFakeOptions options);

  // Makes "projects/p/instances/i/tables/t" exist with change streams enabled.
  void add_table(const std::string& table_name);

  // Partition topology. The boundaries are row keys that split the key space into
  // partitions (sorted, unique, none empty). INVALID_ARGUMENT otherwise.
  absl::Status repartition(std::vector<std::string> boundaries);
  // Splits the partition holding `key` at `key` / merges the two partitions meeting at `key`.
  absl::Status split_at(const std::string& key);
  absl::Status merge_at(const std::string& key);
  std::vector<std::string> boundaries() const;

  // Appends a change as if written by a client (type USER) or by garbage collection.
  absl::Status append(const std::string& table_name, const std::string& row_key,
                      std::vector<Mutation> mutations, bool garbage_collection = false);

  // Fails every open ReadChangeStream with `status` (a cut connection).
  void abort_streams(grpc::Status status);
  // Open ReadChangeStream calls now, and ReadChangeStream calls received in all.
  int open_streams() const;
  std::int64_t streams_started() const;
  // Changes in the log.
  std::int64_t changes() const;

  void shutdown();

  struct State;

 private:
  BigtableChangeStreamsFake() = default;
  std::shared_ptr<State> state_;
  std::unique_ptr<grpc::Service> service_;
  std::unique_ptr<grpc::Service> admin_;
  std::unique_ptr<grpc::Server> server_;
  std::string endpoint_;
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_FAKES_BIGTABLE_CHANGE_STREAMS_H_
