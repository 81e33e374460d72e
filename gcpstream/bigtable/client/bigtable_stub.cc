#include "gcpstream/bigtable/client/bigtable_stub.h"

#include "gcpstream/connector/grpc_status.h"

namespace gcpstream::bigtable {

absl::Status FromGrpc(const grpc::Status& status) { return connector::FromGrpcStatus(status); }

absl::Status FromRpcStatus(const google::rpc::Status& status) {
  if (status.code() == 0) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.code()), status.message());
}

namespace {

// Reads the MutateRows response stream into a MutateRowsResult.
class MutateRowsReactor final
    : public grpc::ClientReadReactor<google::bigtable::v2::MutateRowsResponse> {
 public:
  MutateRowsReactor(std::shared_ptr<const google::bigtable::v2::MutateRowsRequest> request,
                    std::function<void(MutateRowsResult)> done)
      : request_(std::move(request)), done_(std::move(done)) {}

  void start(google::bigtable::v2::Bigtable::Stub& stub, std::chrono::milliseconds timeout) {
    if (timeout.count() > 0) context_.set_deadline(std::chrono::system_clock::now() + timeout);
    stub.async()->MutateRows(&context_, request_.get(), this);
    StartRead(&response_);
    StartCall();
  }
  void cancel() { context_.TryCancel(); }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    for (const auto& e : response_.entries()) {
      result_.entries.emplace_back(e.index(), FromRpcStatus(e.status()));
    }
    StartRead(&response_);
  }
  void OnDone(const grpc::Status& status) override {
    result_.rpc = FromGrpc(status);
    auto done = std::move(done_);
    auto result = std::move(result_);
    self_.reset();  // may delete this
    done(std::move(result));
  }
  // Keeps the reactor alive until OnDone.
  std::shared_ptr<MutateRowsReactor> self_;

 private:
  grpc::ClientContext context_;
  std::shared_ptr<const google::bigtable::v2::MutateRowsRequest> request_;
  google::bigtable::v2::MutateRowsResponse response_;
  MutateRowsResult result_;
  std::function<void(MutateRowsResult)> done_;
};

class GrpcBigtableDataStub final : public BigtableDataStub {
 public:
  explicit GrpcBigtableDataStub(std::shared_ptr<grpc::Channel> channel)
      : stub_(google::bigtable::v2::Bigtable::NewStub(std::move(channel))) {}

  std::function<void()> async_mutate_rows(
      std::shared_ptr<const google::bigtable::v2::MutateRowsRequest> request,
      std::chrono::milliseconds timeout, std::function<void(MutateRowsResult)> done) override {
    auto reactor = std::make_shared<MutateRowsReactor>(std::move(request), std::move(done));
    reactor->self_ = reactor;
    std::weak_ptr<MutateRowsReactor> weak = reactor;
    reactor->start(*stub_, timeout);
    return [weak] {
      if (auto r = weak.lock()) r->cancel();
    };
  }

 private:
  std::unique_ptr<google::bigtable::v2::Bigtable::Stub> stub_;
};

}  // namespace

std::shared_ptr<BigtableDataStub> MakeGrpcBigtableDataStub(std::shared_ptr<grpc::Channel> channel) {
  return std::make_shared<GrpcBigtableDataStub>(std::move(channel));
}

}  // namespace gcpstream::bigtable
