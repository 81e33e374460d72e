#include "gcpstream/spanner/client/spanner_stub.h"

#include "gcpstream/connector/grpc_status.h"
#include "gcpstream/connector/streamed_batch_call.h"
#include "gcpstream/connector/unary_call.h"

namespace gcpstream::spanner {
namespace {

namespace sp = google::spanner::v1;

constexpr char kSessionType[] = "type.googleapis.com/google.spanner.v1.Session";

void SetTimeout(grpc::ClientContext& context, std::chrono::milliseconds timeout) {
  if (timeout.count() > 0) context.set_deadline(std::chrono::system_clock::now() + timeout);
}

// One unary call on the callback API (connector::StartUnaryCall), not cancelled by the caller.
template <typename Request, typename Response, typename Start>
void CallUnary(std::shared_ptr<const Request> request, std::chrono::milliseconds timeout,
               Start start, std::function<void(absl::StatusOr<Response>)> done) {
  (void)connector::StartUnaryCall<Request, Response>(std::move(request), timeout, std::move(start),
                                                     std::move(done));
}

// A streaming read on the synchronous API, pulled by one thread.
class GrpcResultStream final : public PartialResultSetStream {
 public:
  template <typename Request, typename Open>
  GrpcResultStream(std::shared_ptr<const Request> request, std::chrono::milliseconds timeout,
                   Open open)
      : keep_(request) {
    SetTimeout(context_, timeout);
    reader_ = open(&context_, *request);
  }
  ~GrpcResultStream() override {
    if (ended_) return;
    context_.TryCancel();
    sp::PartialResultSet ignored;
    while (reader_->Read(&ignored)) {
    }
    (void)reader_->Finish();
  }
  std::optional<sp::PartialResultSet> read() override {
    if (ended_) return std::nullopt;
    sp::PartialResultSet part;
    if (reader_->Read(&part)) return part;
    ended_ = true;
    status_ = connector::FromGrpcStatus(reader_->Finish());
    return std::nullopt;
  }
  absl::Status status() override { return status_; }
  void cancel() override { context_.TryCancel(); }

 private:
  std::shared_ptr<const void> keep_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<sp::PartialResultSet>> reader_;
  bool ended_ = false;
  absl::Status status_;
};

class GrpcSpannerStub final : public SpannerStub {
 public:
  explicit GrpcSpannerStub(std::shared_ptr<grpc::Channel> channel)
      : stub_(sp::Spanner::NewStub(std::move(channel))) {}

  std::function<void()> async_batch_write(
      std::shared_ptr<const sp::BatchWriteRequest> request, std::chrono::milliseconds timeout,
      std::function<void(connector::BatchCallResult)> done) override {
    return connector::StartStreamedBatchCall<sp::BatchWriteRequest, sp::BatchWriteResponse>(
        std::move(request), timeout,
        [stub = stub_.get()](grpc::ClientContext* context, const sp::BatchWriteRequest* r,
                             grpc::ClientReadReactor<sp::BatchWriteResponse>* reactor) {
          stub->async()->BatchWrite(context, r, reactor);
        },
        [](const sp::BatchWriteResponse& response, connector::BatchCallResult& result) {
          const absl::Status status = connector::FromRpcStatus(response.status());
          for (int index : response.indexes()) result.entries.emplace_back(index, status);
        },
        std::move(done));
  }

  void async_batch_create_sessions(
      std::string database, int count, std::chrono::milliseconds timeout,
      std::function<void(absl::StatusOr<std::vector<std::string>>)> done) override {
    auto request = std::make_shared<sp::BatchCreateSessionsRequest>();
    request->set_database(std::move(database));
    request->set_session_count(count);
    CallUnary<sp::BatchCreateSessionsRequest, sp::BatchCreateSessionsResponse>(
        std::move(request), timeout,
        [this](auto* context, auto* r, auto* response, auto cb) {
          stub_->async()->BatchCreateSessions(context, r, response, std::move(cb));
        },
        [done = std::move(done)](absl::StatusOr<sp::BatchCreateSessionsResponse> response) {
          if (!response.ok()) return done(response.status());
          std::vector<std::string> names;
          for (const auto& s : response->session()) names.push_back(s.name());
          done(std::move(names));
        });
  }

  void async_execute_sql(std::shared_ptr<const sp::ExecuteSqlRequest> request,
                         std::chrono::milliseconds timeout,
                         std::function<void(absl::StatusOr<sp::ResultSet>)> done) override {
    CallUnary<sp::ExecuteSqlRequest, sp::ResultSet>(
        std::move(request), timeout,
        [this](auto* context, auto* r, auto* response, auto cb) {
          stub_->async()->ExecuteSql(context, r, response, std::move(cb));
        },
        std::move(done));
  }

  void async_delete_session(std::string name, std::chrono::milliseconds timeout,
                            std::function<void(absl::Status)> done) override {
    auto request = std::make_shared<sp::DeleteSessionRequest>();
    request->set_name(std::move(name));
    CallUnary<sp::DeleteSessionRequest, google::protobuf::Empty>(
        std::move(request), timeout,
        [this](auto* context, auto* r, auto* response, auto cb) {
          stub_->async()->DeleteSession(context, r, response, std::move(cb));
        },
        [done = std::move(done)](absl::StatusOr<google::protobuf::Empty> r) { done(r.status()); });
  }

  void async_begin_transaction(std::shared_ptr<const sp::BeginTransactionRequest> request,
                               std::chrono::milliseconds timeout,
                               std::function<void(absl::StatusOr<sp::Transaction>)> done) override {
    CallUnary<sp::BeginTransactionRequest, sp::Transaction>(
        std::move(request), timeout,
        [this](auto* context, auto* r, auto* response, auto cb) {
          stub_->async()->BeginTransaction(context, r, response, std::move(cb));
        },
        std::move(done));
  }

  void async_commit(std::shared_ptr<const sp::CommitRequest> request,
                    std::chrono::milliseconds timeout,
                    std::function<void(absl::StatusOr<sp::CommitResponse>)> done) override {
    CallUnary<sp::CommitRequest, sp::CommitResponse>(
        std::move(request), timeout,
        [this](auto* context, auto* r, auto* response, auto cb) {
          stub_->async()->Commit(context, r, response, std::move(cb));
        },
        std::move(done));
  }

  void async_rollback(std::shared_ptr<const sp::RollbackRequest> request,
                      std::chrono::milliseconds timeout,
                      std::function<void(absl::Status)> done) override {
    CallUnary<sp::RollbackRequest, google::protobuf::Empty>(
        std::move(request), timeout,
        [this](auto* context, auto* r, auto* response, auto cb) {
          stub_->async()->Rollback(context, r, response, std::move(cb));
        },
        [done = std::move(done)](absl::StatusOr<google::protobuf::Empty> r) { done(r.status()); });
  }

  void async_partition_query(
      std::shared_ptr<const sp::PartitionQueryRequest> request, std::chrono::milliseconds timeout,
      std::function<void(absl::StatusOr<sp::PartitionResponse>)> done) override {
    CallUnary<sp::PartitionQueryRequest, sp::PartitionResponse>(
        std::move(request), timeout,
        [this](auto* context, auto* r, auto* response, auto cb) {
          stub_->async()->PartitionQuery(context, r, response, std::move(cb));
        },
        std::move(done));
  }

  void async_partition_read(
      std::shared_ptr<const sp::PartitionReadRequest> request, std::chrono::milliseconds timeout,
      std::function<void(absl::StatusOr<sp::PartitionResponse>)> done) override {
    CallUnary<sp::PartitionReadRequest, sp::PartitionResponse>(
        std::move(request), timeout,
        [this](auto* context, auto* r, auto* response, auto cb) {
          stub_->async()->PartitionRead(context, r, response, std::move(cb));
        },
        std::move(done));
  }

  std::unique_ptr<PartialResultSetStream> execute_streaming_sql(
      std::shared_ptr<const sp::ExecuteSqlRequest> request,
      std::chrono::milliseconds timeout) override {
    return std::make_unique<GrpcResultStream>(
        std::move(request), timeout,
        [this](grpc::ClientContext* context, const sp::ExecuteSqlRequest& r) {
          return stub_->ExecuteStreamingSql(context, r);
        });
  }

  std::unique_ptr<PartialResultSetStream> streaming_read(
      std::shared_ptr<const sp::ReadRequest> request, std::chrono::milliseconds timeout) override {
    return std::make_unique<GrpcResultStream>(
        std::move(request), timeout,
        [this](grpc::ClientContext* context, const sp::ReadRequest& r) {
          return stub_->StreamingRead(context, r);
        });
  }

 private:
  std::unique_ptr<sp::Spanner::Stub> stub_;
};

}  // namespace

std::shared_ptr<SpannerStub> MakeGrpcSpannerStub(std::shared_ptr<grpc::Channel> channel) {
  return std::make_shared<GrpcSpannerStub>(std::move(channel));
}

bool IsSessionNotFound(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kNotFound) return false;
  for (const auto& info : connector::ResourceInfosOf(status)) {
    if (info.resource_type() == kSessionType) return true;
  }
  return false;
}

}  // namespace gcpstream::spanner
