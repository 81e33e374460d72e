#ifndef GCPSTREAM_BIGQUERY_CLIENT_WRITE_STUB_H_
#define GCPSTREAM_BIGQUERY_CLIENT_WRITE_STUB_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "google/cloud/bigquery/storage/v1/storage.grpc.pb.h"

namespace gcpstream::bigquery {

namespace storage_v1 = google::cloud::bigquery::storage::v1;

// Where production BigQuery's Storage Write API listens.
inline constexpr char kBigQueryStorageTarget[] = "bigquerystorage.googleapis.com:443";

// One AppendRows connection (a bidirectional stream). write() and read() may run on two
// threads at once; everything else on any thread. All calls block.
class AppendRowsConnection {
 public:
  virtual ~AppendRowsConnection() = default;
  // False once the connection is broken (then read() soon returns false too).
  virtual bool write(const storage_v1::AppendRowsRequest& request) = 0;
  // False when the connection ended; finish() then tells how.
  virtual bool read(storage_v1::AppendRowsResponse* response) = 0;
  // Half-closes: the service answers what it has, then ends the connection.
  virtual void writes_done() = 0;
  // Ends the connection now; read() returns false.
  virtual void cancel() = 0;
  // How the connection ended (after read() returned false). The gRPC code is kept.
  virtual absl::Status finish() = 0;
};

// The seam under the Storage Write client: the BigQueryWrite RPCs. Unit tests put a fake here;
// the real one wraps the generated stub. Thread-safe. `timeout` bounds a unary call (0: none).
// Failures keep the service's gRPC code and details (connector/grpc_status.h; StorageErrorOf
// reads the StorageError the Storage Write API attaches).
class BigQueryWriteStub {
 public:
  virtual ~BigQueryWriteStub() = default;
  virtual absl::StatusOr<storage_v1::WriteStream> create_write_stream(
      const storage_v1::CreateWriteStreamRequest& request, std::chrono::milliseconds timeout) = 0;
  virtual absl::StatusOr<storage_v1::WriteStream> get_write_stream(
      const storage_v1::GetWriteStreamRequest& request, std::chrono::milliseconds timeout) = 0;
  virtual absl::StatusOr<storage_v1::FlushRowsResponse> flush_rows(
      const storage_v1::FlushRowsRequest& request, std::chrono::milliseconds timeout) = 0;
  virtual absl::StatusOr<storage_v1::FinalizeWriteStreamResponse> finalize_write_stream(
      const storage_v1::FinalizeWriteStreamRequest& request, std::chrono::milliseconds timeout) = 0;
  virtual absl::StatusOr<storage_v1::BatchCommitWriteStreamsResponse> batch_commit_write_streams(
      const storage_v1::BatchCommitWriteStreamsRequest& request,
      std::chrono::milliseconds timeout) = 0;
  // A new AppendRows connection. It has no deadline: an idle connection stays open.
  virtual std::unique_ptr<AppendRowsConnection> append_rows() = 0;
};

std::shared_ptr<BigQueryWriteStub> MakeGrpcBigQueryWriteStub(
    std::shared_ptr<grpc::Channel> channel);

// The StorageError code a failure carries (STORAGE_ERROR_CODE_UNSPECIFIED when none): the
// documented way to tell OFFSET_ALREADY_EXISTS, STREAM_FINALIZED, SCHEMA_MISMATCH_EXTRA_FIELDS
// and the rest apart without reading messages.
storage_v1::StorageError::StorageErrorCode StorageErrorOf(const absl::Status& status);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_CLIENT_WRITE_STUB_H_
