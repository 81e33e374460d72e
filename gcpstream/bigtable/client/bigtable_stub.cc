#include "gcpstream/bigtable/client/bigtable_stub.h"

#include "gcpstream/connector/grpc_status.h"
#include "gcpstream/connector/streamed_batch_call.h"

namespace gcpstream::bigtable {

absl::Status FromGrpc(const grpc::Status& status) { return connector::FromGrpcStatus(status); }

absl::Status FromRpcStatus(const google::rpc::Status& status) {
  return connector::FromRpcStatus(status);
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

 private:
  std::unique_ptr<google::bigtable::v2::Bigtable::Stub> stub_;
};

}  // namespace

std::shared_ptr<BigtableDataStub> MakeGrpcBigtableDataStub(std::shared_ptr<grpc::Channel> channel) {
  return std::make_shared<GrpcBigtableDataStub>(std::move(channel));
}

}  // namespace gcpstream::bigtable
