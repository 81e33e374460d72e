#include "gcpstream/bigtable/client/bigtable_stub.h"

#include "gcpstream/connector/grpc_status.h"
#include "gcpstream/connector/streamed_batch_call.h"
#include "gcpstream/connector/unary_call.h"

namespace gcpstream::bigtable {

absl::Status FromGrpc(const grpc::Status& status) { return connector::FromGrpcStatus(status); }

absl::Status FromRpcStatus(const google::rpc::Status& status) {
  return connector::FromRpcStatus(status);
}

namespace v2 = google::bigtable::v2;

std::function<void()> BigtableDataStub::async_check_and_mutate_row(
    std::shared_ptr<const v2::CheckAndMutateRowRequest>, std::chrono::milliseconds,
    std::function<void(absl::StatusOr<v2::CheckAndMutateRowResponse>)> done) {
  done(absl::UnimplementedError("this Bigtable stub does not serve CheckAndMutateRow"));
  return [] {};
}

std::function<void()> BigtableDataStub::async_read_modify_write_row(
    std::shared_ptr<const v2::ReadModifyWriteRowRequest>, std::chrono::milliseconds,
    std::function<void(absl::StatusOr<v2::ReadModifyWriteRowResponse>)> done) {
  done(absl::UnimplementedError("this Bigtable stub does not serve ReadModifyWriteRow"));
  return [] {};
}

namespace {

class GrpcBigtableDataStub final : public BigtableDataStub {
 public:
  explicit GrpcBigtableDataStub(std::shared_ptr<grpc::Channel> channel)
      : stub_(google::bigtable::v2::Bigtable::NewStub(std::move(channel))) {}

  std::function<void()> async_mutate_rows(
      std::shared_ptr<const google::bigtable::v2::MutateRowsRequest> request,
      std::chrono::milliseconds timeout, std::function<void(MutateRowsResult)> done) override {
    using Request = google::bigtable::v2::MutateRowsRequest;
    using Response = google::bigtable::v2::MutateRowsResponse;
    return connector::StartStreamedBatchCall<Request, Response>(
        std::move(request), timeout,
        [stub = stub_.get()](grpc::ClientContext* context, const Request* r,
                             grpc::ClientReadReactor<Response>* reactor) {
          stub->async()->MutateRows(context, r, reactor);
        },
        [](const Response& response, connector::BatchCallResult& result) {
          for (const auto& e : response.entries()) {
            result.entries.emplace_back(e.index(), FromRpcStatus(e.status()));
          }
        },
        std::move(done));
  }

  std::function<void()> async_check_and_mutate_row(
      std::shared_ptr<const v2::CheckAndMutateRowRequest> request,
      std::chrono::milliseconds timeout,
      std::function<void(absl::StatusOr<v2::CheckAndMutateRowResponse>)> done) override {
    return connector::StartUnaryCall<v2::CheckAndMutateRowRequest, v2::CheckAndMutateRowResponse>(
        std::move(request), timeout,
        [stub = stub_.get()](grpc::ClientContext* context, const v2::CheckAndMutateRowRequest* r,
                             v2::CheckAndMutateRowResponse* response,
                             std::function<void(grpc::Status)> cb) {
          stub->async()->CheckAndMutateRow(context, r, response, std::move(cb));
        },
        std::move(done));
  }

  std::function<void()> async_read_modify_write_row(
      std::shared_ptr<const v2::ReadModifyWriteRowRequest> request,
      std::chrono::milliseconds timeout,
      std::function<void(absl::StatusOr<v2::ReadModifyWriteRowResponse>)> done) override {
    return connector::StartUnaryCall<v2::ReadModifyWriteRowRequest, v2::ReadModifyWriteRowResponse>(
        std::move(request), timeout,
        [stub = stub_.get()](grpc::ClientContext* context, const v2::ReadModifyWriteRowRequest* r,
                             v2::ReadModifyWriteRowResponse* response,
                             std::function<void(grpc::Status)> cb) {
          stub->async()->ReadModifyWriteRow(context, r, response, std::move(cb));
        },
        std::move(done));
  }

 private:
  std::unique_ptr<google::bigtable::v2::Bigtable::Stub> stub_;
};

}  // namespace

std::shared_ptr<BigtableDataStub> MakeGrpcBigtableDataStub(std::shared_ptr<grpc::Channel> channel) {
  return std::make_shared<GrpcBigtableDataStub>(std::move(channel));
}

}  // namespace gcpstream::bigtable
