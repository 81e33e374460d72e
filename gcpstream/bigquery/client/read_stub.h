#ifndef GCPSTREAM_BIGQUERY_CLIENT_READ_STUB_H_
#define GCPSTREAM_BIGQUERY_CLIENT_READ_STUB_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "gcpstream/connector/client_options.h"
#include "google/cloud/bigquery/storage/v1/storage.grpc.pb.h"

namespace gcpstream::bigquery {

namespace storage_v1 = google::cloud::bigquery::storage::v1;

// One ReadRows call (a server stream). read() blocks; cancel() may be called from any thread
// while another waits in read().
class ReadRowsCall {
 public:
  virtual ~ReadRowsCall() = default;
  // False when the stream ended; finish() then tells how.
  virtual bool read(storage_v1::ReadRowsResponse* response) = 0;
  // Ends the call now: a waiting read() returns false. Thread-safe.
  virtual void cancel() = 0;
  // How the stream ended (after read() returned false), with its gRPC code kept.
  virtual absl::Status finish() = 0;
};

// The seam under the source: the BigQueryRead RPCs. Unit tests put a fake here; the real one
// wraps the generated stub. Thread-safe. `timeout` bounds a unary call (0: none). Failures keep
// the service's gRPC code (connector/grpc_status.h).
class BigQueryReadStub {
 public:
  virtual ~BigQueryReadStub() = default;
  virtual absl::StatusOr<storage_v1::ReadSession> create_read_session(
      const storage_v1::CreateReadSessionRequest& request, std::chrono::milliseconds timeout) = 0;
  // A new ReadRows call. It has no deadline: the source bounds a silent stream itself.
  virtual std::unique_ptr<ReadRowsCall> read_rows(const storage_v1::ReadRowsRequest& request) = 0;
};

// Makes a stub; called once per enumerator and once per reader.
using BigQueryReadStubFactory = std::function<absl::StatusOr<std::shared_ptr<BigQueryReadStub>>()>;

// Where production BigQuery's Storage Read API listens (the same host as the write API).
inline constexpr char kBigQueryReadTarget[] = "bigquerystorage.googleapis.com:443";

// A stub factory over a channel built from `client` (its emulator endpoint, credentials and
// channel options), each call a new channel. ReadRows responses may be up to 128 MiB (the
// read API's block bound), so the channel accepts messages that large.
BigQueryReadStubFactory MakeBigQueryReadStubFactory(connector::ClientOptions client);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_CLIENT_READ_STUB_H_
