#ifndef GCPSTREAM_SPANNER_CLIENT_SPANNER_STUB_H_
#define GCPSTREAM_SPANNER_CLIENT_SPANNER_STUB_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/connector/request_batcher.h"
#include "google/spanner/v1/spanner.grpc.pb.h"

namespace gcpstream::spanner {

// Where production Spanner listens.
inline constexpr char kSpannerTarget[] = "spanner.googleapis.com:443";

// One streaming read call (ExecuteStreamingSql or StreamingRead), read by one thread. gRPC's
// flow control holds the service back while the reader does not read, so a slow consumer
// bounds what is buffered. Destroying it cancels the call if it still runs.
class PartialResultSetStream {
 public:
  virtual ~PartialResultSetStream() = default;
  // The next message; nullopt once the stream ended (then status() says how).
  virtual std::optional<google::spanner::v1::PartialResultSet> read() = 0;
  // How the stream ended, its gRPC code kept. Only after read() returned nullopt.
  virtual absl::Status status() = 0;
  // Cancels the call: a read() blocked or to come ends (status() CANCELLED, unless the stream
  // had ended already). The one method any thread may call, at any time.
  virtual void cancel() = 0;
};

// The seam under the Spanner data client: the RPCs it makes, asynchronously. Unit tests put a
// fake here; the real one is the generated stub's callback API. Every `done` runs exactly once,
// on an arbitrary thread (possibly the caller's). A `timeout` of 0 means no deadline. Requests
// are shared and must not change until `done` ran. Thread-safe.
class SpannerStub {
 public:
  virtual ~SpannerStub() = default;

  // One BatchWrite call. Each BatchWriteResponse names the groups it reports (`indexes`) and
  // their one status; they are expanded to one verdict per group index. Returns a function that
  // cancels the call (best effort; `done` still runs, with CANCELLED).
  virtual std::function<void()> async_batch_write(
      std::shared_ptr<const google::spanner::v1::BatchWriteRequest> request,
      std::chrono::milliseconds timeout, std::function<void(connector::BatchCallResult)> done) = 0;

  // BatchCreateSessions: up to `count` session names (the service may return fewer).
  virtual void async_batch_create_sessions(
      std::string database, int count, std::chrono::milliseconds timeout,
      std::function<void(absl::StatusOr<std::vector<std::string>>)> done) = 0;

  // ExecuteSql (a single-use read-only transaction when the request names none): the schema
  // read and the session keep-alive ("SELECT 1").
  virtual void async_execute_sql(
      std::shared_ptr<const google::spanner::v1::ExecuteSqlRequest> request,
      std::chrono::milliseconds timeout,
      std::function<void(absl::StatusOr<google::spanner::v1::ResultSet>)> done) = 0;

  virtual void async_delete_session(std::string name, std::chrono::milliseconds timeout,
                                    std::function<void(absl::Status)> done) = 0;

  // Transactions that write: BeginTransaction, Commit, Rollback.
  virtual void async_begin_transaction(
      std::shared_ptr<const google::spanner::v1::BeginTransactionRequest> request,
      std::chrono::milliseconds timeout,
      std::function<void(absl::StatusOr<google::spanner::v1::Transaction>)> done) = 0;
  virtual void async_commit(
      std::shared_ptr<const google::spanner::v1::CommitRequest> request,
      std::chrono::milliseconds timeout,
      std::function<void(absl::StatusOr<google::spanner::v1::CommitResponse>)> done) = 0;
  virtual void async_rollback(std::shared_ptr<const google::spanner::v1::RollbackRequest> request,
                              std::chrono::milliseconds timeout,
                              std::function<void(absl::Status)> done) = 0;

  // The partition tokens of a query or a read in a read-only transaction.
  virtual void async_partition_query(
      std::shared_ptr<const google::spanner::v1::PartitionQueryRequest> request,
      std::chrono::milliseconds timeout,
      std::function<void(absl::StatusOr<google::spanner::v1::PartitionResponse>)> done) = 0;
  virtual void async_partition_read(
      std::shared_ptr<const google::spanner::v1::PartitionReadRequest> request,
      std::chrono::milliseconds timeout,
      std::function<void(absl::StatusOr<google::spanner::v1::PartitionResponse>)> done) = 0;

  // Streaming reads, pulled by the caller (a reader's fetch thread). Never null.
  virtual std::unique_ptr<PartialResultSetStream> execute_streaming_sql(
      std::shared_ptr<const google::spanner::v1::ExecuteSqlRequest> request,
      std::chrono::milliseconds timeout) = 0;
  virtual std::unique_ptr<PartialResultSetStream> streaming_read(
      std::shared_ptr<const google::spanner::v1::ReadRequest> request,
      std::chrono::milliseconds timeout) = 0;
};

std::shared_ptr<SpannerStub> MakeGrpcSpannerStub(std::shared_ptr<grpc::Channel> channel);

// Whether `status` says that the session a request named no longer exists (deleted after an
// hour idle, or by anyone): NOT_FOUND carrying a ResourceInfo detail whose resource_type is
// the Session type ("type.googleapis.com/google.spanner.v1.Session"), as Spanner sends it.
// A NOT_FOUND about a table, a column or the database carries another resource type (or
// none) and is not this.
bool IsSessionNotFound(const absl::Status& status);

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CLIENT_SPANNER_STUB_H_
