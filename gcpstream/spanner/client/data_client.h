#ifndef GCPSTREAM_SPANNER_CLIENT_DATA_CLIENT_H_
#define GCPSTREAM_SPANNER_CLIENT_DATA_CLIENT_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/connector/grpc_status.h"
#include "gcpstream/connector/recovery_backoff.h"
#include "gcpstream/spanner/client/mutation.h"
#include "gcpstream/spanner/client/session_pool.h"
#include "gcpstream/spanner/client/spanner_stub.h"

namespace gcpstream::spanner {

struct DataClientOptions {
  // Deadline of each unary call (Commit, BeginTransaction, PartitionQuery, ...). 0: none.
  std::chrono::milliseconds rpc_timeout{std::chrono::seconds(60)};
  // Deadline of one attempt of a streaming read, from its start to its last row. 0: none (a
  // partition of a large table may stream for a long time; a ReadCancellation ends it).
  std::chrono::milliseconds stream_timeout{0};
  // Longest wait for the next message of a streaming read. A stream silent for longer is cut
  // and resumed from its last resume token, like a dropped connection (within `retry`; after
  // the budget the read fails with DEADLINE_EXCEEDED naming this option). 0: none, the
  // default: a selective query may scan long between results. A stalled network or service
  // otherwise holds a read forever; a change stream query, which sends a heartbeat every
  // heartbeat interval, sets it (see SpannerChangeStreamSource).
  std::chrono::milliseconds stream_idle_timeout{0};
  // Retries of a streaming read after a transient failure, and of a commit the service aborted
  // or whose session was lost. Google's Spanner clients back off from 250 ms to 32 s; ours too.
  connector::RecoveryOptions retry{std::chrono::milliseconds(250), std::chrono::seconds(32), 10,
                                   0.25};
  // Bytes of rows a streaming read holds back while waiting for a resume token (rows after the
  // last token are only handed out once a token confirms them). Beyond this the rows are
  // handed out anyway and a failure before the next token is not resumable. Google's clients
  // bound this the same way.
  std::size_t max_unconfirmed_bytes = 32u << 20;
  // Sleeps between retries; tests inject one that records instead of sleeping.
  std::function<void(std::chrono::milliseconds)> sleep;
};

// How a read-write transaction that only writes is committed.
enum class CommitMode {
  // One Commit naming a single-use read-write transaction: one round trip.
  kSingleUse,
  // BeginTransaction (read-write), then Commit naming the transaction; a failed Commit is
  // followed by a best-effort Rollback.
  kBeginThenCommit,
};

struct CommitOptions {
  CommitMode mode = CommitMode::kSingleUse;
  bool return_commit_stats = false;
  // Spanner may hold the commit up to this long to batch it with others (0 to 500 ms); unset
  // leaves the service's default.
  std::optional<std::chrono::milliseconds> max_commit_delay;
  google::spanner::v1::RequestOptions::Priority priority =
      google::spanner::v1::RequestOptions::PRIORITY_UNSPECIFIED;
  std::string transaction_tag;
};

// Stops a streaming read from another thread (a reader closing, a job cancelled): the call in
// flight is cancelled and a backoff wait cut short, and the read returns CANCELLED. One per
// read; cancel() may come before, during or after it. Thread-safe.
class ReadCancellation {
 public:
  void cancel();
  bool cancelled() const;

 private:
  friend class SpannerDataClient;
  // The call now running, cancelled at once if cancel() came first. Returns false then.
  bool attach(PartialResultSetStream* stream);
  void detach();
  // Waits `delay` or until cancel(); false when cancelled.
  bool wait(std::chrono::milliseconds delay);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;
  PartialResultSetStream* live_ = nullptr;
};

// The rows of a streaming read, one at a time and in order, with the result's metadata (the
// row type). Returning non-OK stops the read; the read then returns that status.
using RowCallback = std::function<absl::Status(const google::spanner::v1::ResultSetMetadata&,
                                               std::vector<google::protobuf::Value> row)>;

// The Spanner data client for one database: transactions that write (Commit), streaming reads
// (ExecuteStreamingSql, StreamingRead) that resume after a transient failure, and the
// partitioning calls of batch reads. Calls block the caller (they are meant for a split
// reader's fetch thread or a setup step, never the mailbox thread). Thread-safe.
//
// Sessions: a request whose `session` is empty runs on a session of the pool, returned after
// the call; a session the service no longer knows (IsSessionNotFound) is discarded and the
// whole operation runs again on another, as long as nothing of it was handed to the caller.
// A request naming its own session (a batch read-only transaction's) runs on exactly that
// one, and a lost session is returned to the caller as the NOT_FOUND it is.
class SpannerDataClient {
 public:
  SpannerDataClient(std::string database, std::shared_ptr<SpannerStub> stub,
                    std::shared_ptr<SessionPool> pool, DataClientOptions options = {});

  const std::string& database() const { return database_; }

  // Applies `mutations` atomically. Retries, within the retry budget:
  //  - ABORTED (nothing was applied): the transaction again on the same session, after the
  //    delay the service's RetryInfo asks for, or the backoff's;
  //  - a lost session (nothing was applied): at once, on a new session;
  //  - in kBeginThenCommit mode, UNAVAILABLE and DEADLINE_EXCEEDED of the Commit: the same
  //    Commit again, naming the same transaction, which the service applies at most once (as
  //    Google's generated Commit settings do).
  // A single-use Commit that failed with UNAVAILABLE or DEADLINE_EXCEEDED is returned: it may
  // have been applied, and running it again would be a new transaction. Every other failure
  // (a NOT_FOUND table included) is returned with its gRPC code. INVALID_ARGUMENT without a
  // call for an empty list or a max_commit_delay outside 0..500 ms.
  absl::StatusOr<google::spanner::v1::CommitResponse> Commit(std::vector<Mutation> mutations,
                                                             const CommitOptions& options = {});

  // Runs a query and hands each row to `on_row`. A failure with a transient code (UNAVAILABLE,
  // RESOURCE_EXHAUSTED) resumes the stream from its last resume token, so no row is handed out
  // twice or skipped; without a token yet, the query restarts. A failure that cannot be
  // resumed (rows were handed out beyond the last token) is returned with its code.
  // The retry budget starts again whenever a resumed stream makes progress (hands out a row),
  // so a long read survives any number of brief outages that are far apart, while a stream
  // that keeps failing inside one row exhausts it. `cancel` (optional)
  // stops the read from another thread.
  absl::Status ExecuteStreamingSql(google::spanner::v1::ExecuteSqlRequest request,
                                   const RowCallback& on_row, ReadCancellation* cancel = nullptr);
  // The same for a read of a table or index by key set.
  absl::Status StreamingRead(google::spanner::v1::ReadRequest request, const RowCallback& on_row,
                             ReadCancellation* cancel = nullptr);

  // A session of the pool for the caller to keep (a batch read-only transaction lives on one);
  // give it back with ReleaseSession, or DiscardSession when the service lost it.
  absl::StatusOr<std::string> AcquireSession();
  void ReleaseSession(const std::string& session);
  void DiscardSession(const std::string& session);

  // BeginTransaction on `session`. This and the partition calls are retried on UNAVAILABLE
  // within the retry budget (they change nothing).
  absl::StatusOr<google::spanner::v1::Transaction> BeginTransaction(
      const std::string& session, google::spanner::v1::TransactionOptions options);
  // PartitionQuery / PartitionRead: the partition tokens of a query or read in a read-only
  // transaction (the request names session and transaction).
  absl::StatusOr<google::spanner::v1::PartitionResponse> PartitionQuery(
      google::spanner::v1::PartitionQueryRequest request);
  absl::StatusOr<google::spanner::v1::PartitionResponse> PartitionRead(
      google::spanner::v1::PartitionReadRequest request);

 private:
  using OpenStream = std::function<std::unique_ptr<PartialResultSetStream>(
      const std::string& session, const std::string& resume_token)>;
  absl::Status Stream(const std::string& session, const OpenStream& open, const RowCallback& on_row,
                      ReadCancellation* cancel);
  absl::StatusOr<google::spanner::v1::CommitResponse> CommitOnce(
      const std::string& session, const std::vector<Mutation>& mutations,
      const CommitOptions& options);
  // A call that changes nothing, retried on UNAVAILABLE.
  template <typename T>
  absl::StatusOr<T> Idempotent(
      std::string_view what,
      const std::function<void(std::function<void(absl::StatusOr<T>)>)>& start);
  // false when cancelled during the wait.
  bool Sleep(std::chrono::milliseconds delay, ReadCancellation* cancel = nullptr) const;

  const std::string database_;
  std::shared_ptr<SpannerStub> stub_;
  std::shared_ptr<SessionPool> pool_;
  const DataClientOptions options_;
};

// Whether a streaming read that failed with `status` may resume (or restart): UNAVAILABLE and
// RESOURCE_EXHAUSTED, the codes Google's Spanner clients retry for streaming reads. (Those
// clients also resume some INTERNAL errors by their message text; we classify by code only.)
bool IsResumableReadFailure(const absl::Status& status);

// The delay an ABORTED status asks for (google.rpc.RetryInfo in its details), if any.
using connector::RetryDelayOf;

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CLIENT_DATA_CLIENT_H_
