#ifndef GCPSTREAM_TESTS_SUPPORT_SCRIPTED_BIGTABLE_READS_H_
#define GCPSTREAM_TESTS_SUPPORT_SCRIPTED_BIGTABLE_READS_H_

#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gcpstream/bigtable/client/blocking_stub.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"

namespace gcpstream::testing {

// An in-process google.bigtable.v2.Bigtable server for the scan source's seams, serving
// ReadRows and SampleRowKeys over rows the test puts, with the knobs the emulator lacks: values
// cut into chunks of `value_chunk_bytes`, a row first sent in part and then reset (reset_row),
// sampled keys the test chooses, and a stream that fails after a number of rows (optionally in
// the middle of the next row). ReadRows follows the v2 reference: the RowSet's row_keys and
// row_ranges (every bound kind) select the rows, and an empty RowSet selects the whole table;
// filters are not applied. Every request is recorded. Thread-safe.
class ScriptedBigtableReads {
 public:
  struct Cell {
    std::string family, qualifier;
    std::int64_t timestamp_micros = 0;
    std::string value;
  };
  struct Failure {
    int after_rows = 0;    // rows committed on the failing stream before it fails
    bool mid_row = false;  // send the first chunk of the next row, then fail
    grpc::Status status{grpc::StatusCode::UNAVAILABLE, "scripted failure"};
    // Instead of failing: send nothing more and keep the stream open until the client cancels.
    bool stall = false;
  };

  ScriptedBigtableReads();
  ~ScriptedBigtableReads();

  void put(const std::string& key, Cell cell);
  void set_samples(std::vector<std::string> keys);
  // The next ReadRows calls (one each, in order) fail as described.
  void fail_next_streams(std::vector<Failure> failures);
  // Values are cut into pieces of this many bytes [0: whole].
  void set_value_chunk_bytes(std::size_t bytes);
  // Each row is first sent in part and reset before it is sent whole.
  void set_reset_every_row(bool reset);

  std::vector<google::bigtable::v2::ReadRowsRequest> read_requests() const;
  int sample_calls() const;
  bigtable::BigtableStubFactory stubs() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
  std::unique_ptr<grpc::Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_SCRIPTED_BIGTABLE_READS_H_
