#include "gcpstream/spanner/client/spanner_stub.h"

#include "gcpstream/connector/grpc_status.h"
#include "gcpstream/connector/streamed_batch_call.h"

namespace gcpstream::spanner {
namespace {

namespace sp = google::spanner::v1;

constexpr char kSessionType[] = "type.googleapis.com/google.spanner.v1.Session";

void SetTimeout(grpc::ClientContext& context, std::chrono::milliseconds timeout) {
  if (timeout.count() > 0) context.set_deadline(std::chrono::system_clock::now() + timeout);
}

// One unary call on the callback API: owns its context, request and response until done.
template <typename Request, typename Response>
struct UnaryCall {
  grpc::ClientContext context;
  Request request;
  Response response;
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
    using Call = UnaryCall<sp::BatchCreateSessionsRequest, sp::BatchCreateSessionsResponse>;
    auto call = std::make_shared<Call>();
    call->request.set_database(std::move(database));
    call->request.set_session_count(count);
    SetTimeout(call->context, timeout);
    stub_->async()->BatchCreateSessions(&call->context, &call->request, &call->response,
                                        [call, done = std::move(done)](grpc::Status status) {
                                          if (!status.ok())
                                            return done(connector::FromGrpcStatus(status));
                                          std::vector<std::string> names;
                                          for (const auto& s : call->response.session())
                                            names.push_back(s.name());
                                          done(std::move(names));
                                        });
  }

  void async_execute_sql(std::shared_ptr<const sp::ExecuteSqlRequest> request,
                         std::chrono::milliseconds timeout,
                         std::function<void(absl::StatusOr<sp::ResultSet>)> done) override {
    struct Call {
      grpc::ClientContext context;
      std::shared_ptr<const sp::ExecuteSqlRequest> request;
      sp::ResultSet response;
    };
    auto call = std::make_shared<Call>();
    call->request = std::move(request);
    SetTimeout(call->context, timeout);
    stub_->async()->ExecuteSql(&call->context, call->request.get(), &call->response,
                               [call, done = std::move(done)](grpc::Status status) {
                                 if (!status.ok()) return done(connector::FromGrpcStatus(status));
                                 done(std::move(call->response));
                               });
  }

  void async_delete_session(std::string name, std::chrono::milliseconds timeout,
                            std::function<void(absl::Status)> done) override {
    using Call = UnaryCall<sp::DeleteSessionRequest, google::protobuf::Empty>;
    auto call = std::make_shared<Call>();
    call->request.set_name(std::move(name));
    SetTimeout(call->context, timeout);
    stub_->async()->DeleteSession(&call->context, &call->request, &call->response,
                                  [call, done = std::move(done)](grpc::Status status) {
                                    done(connector::FromGrpcStatus(status));
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
