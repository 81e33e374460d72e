#ifndef GCPSTREAM_TESTS_SUPPORT_FAKE_SPANNER_H_
#define GCPSTREAM_TESTS_SUPPORT_FAKE_SPANNER_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gcpstream/connector/grpc_status.h"
#include "gcpstream/spanner/client/spanner_stub.h"

namespace gcpstream::testing {

// A SpannerStub that records every BatchWrite and answers it when told to (or at once through
// `on_batch_write`; unset answers every group OK). Sessions are "sessions/s<N>"; the schema
// read answers `dialect` and `index_rows`. Cancelling a pending call answers it CANCELLED, as
// gRPC does. Thread-safe.
class FakeSpannerStub final : public spanner::SpannerStub {
 public:
  using BatchWriteRequest = google::spanner::v1::BatchWriteRequest;
  struct Call {
    BatchWriteRequest request;
    std::chrono::milliseconds timeout{0};
    std::function<void(connector::BatchCallResult)> done;  // empty once answered
    bool cancelled = false;
  };
  // The answer to call `index`; nullopt leaves it pending.
  std::function<std::optional<connector::BatchCallResult>(std::size_t, const BatchWriteRequest&)>
      on_batch_write;
  std::string dialect = "GOOGLE_STANDARD_SQL";
  std::vector<std::array<std::string, 4>> index_rows;  // schema, table, index, column
  absl::Status session_error;  // what BatchCreateSessions answers, when not OK
  absl::Status schema_error;   // what the schema read answers, when not OK

  // Every group of `request` with `status`.
  static connector::BatchCallResult All(const BatchWriteRequest& request, absl::Status status) {
    connector::BatchCallResult r;
    for (int i = 0; i < request.mutation_groups_size(); ++i) r.entries.emplace_back(i, status);
    return r;
  }

  std::function<void()> async_batch_write(
      std::shared_ptr<const BatchWriteRequest> request, std::chrono::milliseconds timeout,
      std::function<void(connector::BatchCallResult)> done) override {
    std::size_t index;
    decltype(on_batch_write) responder;
    {
      std::lock_guard lock(mu_);
      index = calls_.size();
      calls_.push_back(Call{*request, timeout, std::move(done), false});
      responder = on_batch_write;
    }
    std::optional<connector::BatchCallResult> answer =
        responder ? responder(index, *request) : std::optional(All(*request, absl::OkStatus()));
    if (answer) complete(index, std::move(*answer));
    return [this, index] {
      {
        std::lock_guard lock(mu_);
        calls_[index].cancelled = true;
      }
      connector::BatchCallResult r;
      r.rpc = absl::CancelledError("cancelled");
      complete(index, std::move(r));
    };
  }

  // Answers call `i` (ignored when it was answered already).
  void complete(std::size_t i, connector::BatchCallResult result) {
    std::function<void(connector::BatchCallResult)> done;
    {
      std::lock_guard lock(mu_);
      if (i >= calls_.size()) return;
      done = std::move(calls_[i].done);
      calls_[i].done = nullptr;
    }
    if (done) done(std::move(result));
  }

  void async_batch_create_sessions(
      std::string, int count, std::chrono::milliseconds,
      std::function<void(absl::StatusOr<std::vector<std::string>>)> done) override {
    if (!session_error.ok()) return done(session_error);
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i) {
      names.push_back("sessions/s" + std::to_string(sessions_created_.fetch_add(1)));
    }
    done(std::move(names));
  }

  void async_execute_sql(
      std::shared_ptr<const google::spanner::v1::ExecuteSqlRequest> request,
      std::chrono::milliseconds,
      std::function<void(absl::StatusOr<google::spanner::v1::ResultSet>)> done) override {
    if (!schema_error.ok()) return done(schema_error);
    google::spanner::v1::ResultSet result;
    if (request->sql().find("DATABASE_OPTIONS") != std::string::npos) {
      result.add_rows()->add_values()->set_string_value(dialect);
    } else if (request->sql().find("INDEX_COLUMNS") != std::string::npos) {
      for (const auto& row : index_rows) {
        auto* r = result.add_rows();
        for (const auto& v : row) r->add_values()->set_string_value(v);
      }
    } else {
      result.add_rows()->add_values()->set_string_value("1");
    }
    {
      std::lock_guard lock(held_mu_);
      if (hold_execute_sql) {
        held_execute_sql_.push_back(
            [done = std::move(done), result = std::move(result)]() mutable { done(result); });
        return;
      }
    }
    done(std::move(result));
  }

  // While hold_execute_sql is set, ExecuteSql answers wait until answer_held_execute_sql().
  int held_execute_sql() {
    std::lock_guard lock(held_mu_);
    return static_cast<int>(held_execute_sql_.size());
  }
  void answer_held_execute_sql() {
    std::vector<std::function<void()>> held;
    {
      std::lock_guard lock(held_mu_);
      held.swap(held_execute_sql_);
    }
    for (auto& f : held) f();
  }

  void async_delete_session(std::string, std::chrono::milliseconds,
                            std::function<void(absl::Status)> done) override {
    sessions_deleted_++;
    done(absl::OkStatus());
  }

  // Streaming reads: call `n` (counted across both kinds) sends the messages of
  // on_stream(n, resume_token) and ends with its status. Unset: an empty OK stream.
  struct StreamScript {
    std::vector<google::spanner::v1::PartialResultSet> parts;
    absl::Status end;
    bool hang = false;  // after the parts, wait until the client cancels
  };
  struct StreamCall {
    std::string session;
    std::string resume_token;
    std::string partition_token;
    std::string transaction_id;
    bool data_boost = false;
    google::spanner::v1::RequestOptions::Priority priority =
        google::spanner::v1::RequestOptions::PRIORITY_UNSPECIFIED;
    std::string sql;  // empty for a StreamingRead
  };
  std::function<StreamScript(std::size_t, const std::string&)> on_stream;
  // The same with the whole call (partition token, transaction, options); wins over on_stream.
  std::function<StreamScript(std::size_t, const StreamCall&)> on_call;
  // Commit `n`'s answer; unset answers OK with a commit timestamp.
  std::function<absl::StatusOr<google::spanner::v1::CommitResponse>(
      std::size_t, const google::spanner::v1::CommitRequest&)>
      on_commit;

  // NOT_FOUND about a session, with the ResourceInfo detail Spanner sends.
  static absl::Status SessionNotFound() {
    google::rpc::Status details;
    details.set_code(5);
    google::rpc::ResourceInfo info;
    info.set_resource_type("type.googleapis.com/google.spanner.v1.Session");
    details.add_details()->PackFrom(info);
    absl::Status out = absl::NotFoundError("Session not found");
    out.SetPayload(connector::kRpcStatusPayload, absl::Cord(details.SerializeAsString()));
    return out;
  }

  std::unique_ptr<spanner::PartialResultSetStream> execute_streaming_sql(
      std::shared_ptr<const google::spanner::v1::ExecuteSqlRequest> request,
      std::chrono::milliseconds) override {
    return stream({request->session(), request->resume_token(), request->partition_token(),
                   request->transaction().id(), request->data_boost_enabled(),
                   request->request_options().priority(), request->sql()});
  }
  std::unique_ptr<spanner::PartialResultSetStream> streaming_read(
      std::shared_ptr<const google::spanner::v1::ReadRequest> request,
      std::chrono::milliseconds) override {
    return stream({request->session(), request->resume_token(), request->partition_token(),
                   request->transaction().id(), request->data_boost_enabled(),
                   request->request_options().priority(), ""});
  }

  // BeginTransaction `n` and PartitionQuery/PartitionRead `n` fail with this when not OK.
  std::function<absl::Status(std::size_t)> on_begin;
  std::function<absl::Status(std::size_t)> on_partition;

  void async_begin_transaction(
      std::shared_ptr<const google::spanner::v1::BeginTransactionRequest> request,
      std::chrono::milliseconds,
      std::function<void(absl::StatusOr<google::spanner::v1::Transaction>)> done) override {
    {
      std::lock_guard lock(mu_);
      begin_requests_.push_back(*request);
    }
    const int n = begin_calls_.fetch_add(1);
    if (on_begin) {
      if (absl::Status s = on_begin(static_cast<std::size_t>(n)); !s.ok()) return done(s);
    }
    google::spanner::v1::Transaction tx;
    tx.set_id("tx" + std::to_string(begins_.fetch_add(1)));
    tx.mutable_read_timestamp()->set_seconds(read_timestamp_seconds);
    done(std::move(tx));
  }
  void async_commit(
      std::shared_ptr<const google::spanner::v1::CommitRequest> request, std::chrono::milliseconds,
      std::function<void(absl::StatusOr<google::spanner::v1::CommitResponse>)> done) override {
    std::size_t index;
    {
      std::lock_guard lock(mu_);
      index = commits_.size();
      commits_.push_back(*request);
    }
    if (on_commit) return done(on_commit(index, *request));
    google::spanner::v1::CommitResponse response;
    response.mutable_commit_timestamp()->set_seconds(1);
    done(std::move(response));
  }
  void async_rollback(std::shared_ptr<const google::spanner::v1::RollbackRequest> request,
                      std::chrono::milliseconds, std::function<void(absl::Status)> done) override {
    {
      std::lock_guard lock(mu_);
      rollbacks_.push_back(request->transaction_id());
    }
    done(absl::OkStatus());
  }
  void async_partition_query(
      std::shared_ptr<const google::spanner::v1::PartitionQueryRequest> request,
      std::chrono::milliseconds,
      std::function<void(absl::StatusOr<google::spanner::v1::PartitionResponse>)> done) override {
    {
      std::lock_guard lock(mu_);
      partition_queries_.push_back(*request);
    }
    done(partition());
  }
  void async_partition_read(
      std::shared_ptr<const google::spanner::v1::PartitionReadRequest> request,
      std::chrono::milliseconds,
      std::function<void(absl::StatusOr<google::spanner::v1::PartitionResponse>)> done) override {
    {
      std::lock_guard lock(mu_);
      partition_reads_.push_back(*request);
    }
    done(partition());
  }
  int partition_calls() const { return partition_calls_.load(); }
  // How many partitions PartitionQuery/PartitionRead return ("p0", "p1", ...), and the read
  // timestamp BeginTransaction reports (seconds since the epoch).
  int partitions = 2;
  std::int64_t read_timestamp_seconds = 1700000000;
  std::vector<google::spanner::v1::BeginTransactionRequest> begin_requests() const {
    std::lock_guard lock(mu_);
    return begin_requests_;
  }
  std::vector<google::spanner::v1::PartitionQueryRequest> partition_queries() const {
    std::lock_guard lock(mu_);
    return partition_queries_;
  }
  std::vector<google::spanner::v1::PartitionReadRequest> partition_reads() const {
    std::lock_guard lock(mu_);
    return partition_reads_;
  }

  std::vector<StreamCall> streams() const {
    std::lock_guard lock(mu_);
    return streams_;
  }
  std::vector<google::spanner::v1::CommitRequest> commits() const {
    std::lock_guard lock(mu_);
    return commits_;
  }
  std::vector<std::string> rollbacks() const {
    std::lock_guard lock(mu_);
    return rollbacks_;
  }
  int begins() const { return begins_.load(); }

  std::size_t size() const {
    std::lock_guard lock(mu_);
    return calls_.size();
  }
  Call call(std::size_t i) const {
    std::lock_guard lock(mu_);
    Call c = calls_.at(i);
    c.done = nullptr;
    return c;
  }
  int sessions_created() const { return sessions_created_.load(); }
  int sessions_deleted() const { return sessions_deleted_.load(); }

 private:
  class ScriptedStream final : public spanner::PartialResultSetStream {
   public:
    explicit ScriptedStream(StreamScript script)
        : parts_(script.parts.begin(), script.parts.end()), end_(std::move(script.end)) {}
    // Sends the scripted messages; with `hang`, then blocks until cancelled.
    std::optional<google::spanner::v1::PartialResultSet> read() override {
      std::unique_lock lock(mu_);
      if (!cancelled_ && !parts_.empty()) {
        auto part = std::move(parts_.front());
        parts_.pop_front();
        return part;
      }
      if (hang_) cv_.wait(lock, [this] { return cancelled_; });
      if (cancelled_) end_ = absl::CancelledError("cancelled by the client");
      return std::nullopt;
    }
    absl::Status status() override {
      std::lock_guard lock(mu_);
      return end_;
    }
    void cancel() override {
      std::lock_guard lock(mu_);
      cancelled_ = true;
      cv_.notify_all();
    }
    bool hang_ = false;

   private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool cancelled_ = false;
    std::deque<google::spanner::v1::PartialResultSet> parts_;
    absl::Status end_;
  };
  // Two partitions "p0" and "p1", or on_partition's error.
  absl::StatusOr<google::spanner::v1::PartitionResponse> partition() {
    const int n = partition_calls_.fetch_add(1);
    if (on_partition) {
      if (absl::Status s = on_partition(static_cast<std::size_t>(n)); !s.ok()) return s;
    }
    google::spanner::v1::PartitionResponse response;
    for (int i = 0; i < partitions; ++i) {
      response.add_partitions()->set_partition_token("p" + std::to_string(i));
    }
    return response;
  }
  std::unique_ptr<spanner::PartialResultSetStream> stream(StreamCall call) {
    std::size_t index;
    {
      std::lock_guard lock(mu_);
      index = streams_.size();
      streams_.push_back(call);
    }
    StreamScript script = on_call     ? on_call(index, call)
                          : on_stream ? on_stream(index, call.resume_token)
                                      : StreamScript{};
    const bool hang = script.hang;
    auto stream = std::make_unique<ScriptedStream>(std::move(script));
    stream->hang_ = hang;
    return stream;
  }

  mutable std::mutex mu_;
  std::vector<Call> calls_;
  std::vector<StreamCall> streams_;
  std::vector<google::spanner::v1::CommitRequest> commits_;
  std::vector<std::string> rollbacks_;
  std::vector<google::spanner::v1::BeginTransactionRequest> begin_requests_;
  std::vector<google::spanner::v1::PartitionQueryRequest> partition_queries_;
  std::vector<google::spanner::v1::PartitionReadRequest> partition_reads_;
  std::atomic<int> begins_{0};
  std::atomic<int> begin_calls_{0};
  std::atomic<int> partition_calls_{0};
  std::atomic<int> sessions_created_{0};
  std::atomic<int> sessions_deleted_{0};
  std::mutex held_mu_;
  std::vector<std::function<void()>> held_execute_sql_;

 public:
  bool hold_execute_sql = false;  // set before the calls it should hold
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_FAKE_SPANNER_H_
