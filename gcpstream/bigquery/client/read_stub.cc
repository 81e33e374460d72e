#include "gcpstream/bigquery/client/read_stub.h"

#include "gcpstream/api/status_macros.h"
#include "gcpstream/connector/endpoint.h"
#include "gcpstream/connector/grpc_status.h"

namespace gcpstream::bigquery {
namespace {

class GrpcReadRowsCall final : public ReadRowsCall {
 public:
  GrpcReadRowsCall(storage_v1::BigQueryRead::Stub& stub,
                   const storage_v1::ReadRowsRequest& request) {
    // The stream is routed by the read stream it names, as the client libraries do.
    context_.AddMetadata("x-goog-request-params", "read_stream=" + request.read_stream());
    stream_ = stub.ReadRows(&context_, request);
  }
  bool read(storage_v1::ReadRowsResponse* response) override { return stream_->Read(response); }
  void cancel() override { context_.TryCancel(); }
  absl::Status finish() override { return connector::FromGrpcStatus(stream_->Finish()); }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<storage_v1::ReadRowsResponse>> stream_;
};

class GrpcBigQueryReadStub final : public BigQueryReadStub {
 public:
  explicit GrpcBigQueryReadStub(std::shared_ptr<grpc::Channel> channel)
      : channel_(std::move(channel)), stub_(storage_v1::BigQueryRead::NewStub(channel_)) {}

  absl::StatusOr<storage_v1::ReadSession> create_read_session(
      const storage_v1::CreateReadSessionRequest& request,
      std::chrono::milliseconds timeout) override {
    grpc::ClientContext context;
    if (timeout.count() > 0) context.set_deadline(std::chrono::system_clock::now() + timeout);
    context.AddMetadata("x-goog-request-params",
                        "read_session.table=" + request.read_session().table());
    storage_v1::ReadSession session;
    grpc::Status status = stub_->CreateReadSession(&context, request, &session);
    if (!status.ok()) return connector::FromGrpcStatus(status);
    return session;
  }
  std::unique_ptr<ReadRowsCall> read_rows(const storage_v1::ReadRowsRequest& request) override {
    return std::make_unique<GrpcReadRowsCall>(*stub_, request);
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<storage_v1::BigQueryRead::Stub> stub_;
};

}  // namespace

BigQueryReadStubFactory MakeBigQueryReadStubFactory(connector::ClientOptions client) {
  return [client = std::move(client)]() -> absl::StatusOr<std::shared_ptr<BigQueryReadStub>> {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(256 * 1024 * 1024);
    GCP_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                         connector::CreateChannel(client, kBigQueryReadTarget, args,
                                                  connector::CallApi::kBlockingOnly));
    return std::shared_ptr<BigQueryReadStub>(
        std::make_shared<GrpcBigQueryReadStub>(std::move(channel)));
  };
}

}  // namespace gcpstream::bigquery
