#include "gcpstream/bigquery/client/write_stub.h"

#include "gcpstream/connector/grpc_status.h"

namespace gcpstream::bigquery {
namespace {

void SetTimeout(grpc::ClientContext& context, std::chrono::milliseconds timeout) {
  if (timeout.count() > 0) context.set_deadline(std::chrono::system_clock::now() + timeout);
}

class GrpcAppendRowsConnection final : public AppendRowsConnection {
 public:
  explicit GrpcAppendRowsConnection(storage_v1::BigQueryWrite::Stub& stub)
      : stream_(stub.AppendRows(&context_)) {}
  bool write(const storage_v1::AppendRowsRequest& request) override {
    return stream_->Write(request);
  }
  bool read(storage_v1::AppendRowsResponse* response) override { return stream_->Read(response); }
  void writes_done() override { stream_->WritesDone(); }
  void cancel() override { context_.TryCancel(); }
  absl::Status finish() override { return connector::FromGrpcStatus(stream_->Finish()); }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<
      grpc::ClientReaderWriter<storage_v1::AppendRowsRequest, storage_v1::AppendRowsResponse>>
      stream_;
};

class GrpcBigQueryWriteStub final : public BigQueryWriteStub {
 public:
  explicit GrpcBigQueryWriteStub(std::shared_ptr<grpc::Channel> channel)
      : channel_(std::move(channel)), stub_(storage_v1::BigQueryWrite::NewStub(channel_)) {}

  absl::StatusOr<storage_v1::WriteStream> create_write_stream(
      const storage_v1::CreateWriteStreamRequest& request,
      std::chrono::milliseconds timeout) override {
    return Call(&storage_v1::BigQueryWrite::Stub::CreateWriteStream, request, timeout);
  }
  absl::StatusOr<storage_v1::WriteStream> get_write_stream(
      const storage_v1::GetWriteStreamRequest& request,
      std::chrono::milliseconds timeout) override {
    return Call(&storage_v1::BigQueryWrite::Stub::GetWriteStream, request, timeout);
  }
  absl::StatusOr<storage_v1::FlushRowsResponse> flush_rows(
      const storage_v1::FlushRowsRequest& request, std::chrono::milliseconds timeout) override {
    return Call(&storage_v1::BigQueryWrite::Stub::FlushRows, request, timeout);
  }
  absl::StatusOr<storage_v1::FinalizeWriteStreamResponse> finalize_write_stream(
      const storage_v1::FinalizeWriteStreamRequest& request,
      std::chrono::milliseconds timeout) override {
    return Call(&storage_v1::BigQueryWrite::Stub::FinalizeWriteStream, request, timeout);
  }
  absl::StatusOr<storage_v1::BatchCommitWriteStreamsResponse> batch_commit_write_streams(
      const storage_v1::BatchCommitWriteStreamsRequest& request,
      std::chrono::milliseconds timeout) override {
    return Call(&storage_v1::BigQueryWrite::Stub::BatchCommitWriteStreams, request, timeout);
  }
  std::unique_ptr<AppendRowsConnection> append_rows() override {
    return std::make_unique<GrpcAppendRowsConnection>(*stub_);
  }

 private:
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(grpc::Status (storage_v1::BigQueryWrite::Stub::*method)(
                                    grpc::ClientContext*, const Request&, Response*),
                                const Request& request, std::chrono::milliseconds timeout) {
    grpc::ClientContext context;
    SetTimeout(context, timeout);
    Response response;
    grpc::Status status = ((*stub_).*method)(&context, request, &response);
    if (!status.ok()) return connector::FromGrpcStatus(status);
    return response;
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<storage_v1::BigQueryWrite::Stub> stub_;
};

}  // namespace

std::shared_ptr<BigQueryWriteStub> MakeGrpcBigQueryWriteStub(
    std::shared_ptr<grpc::Channel> channel) {
  return std::make_shared<GrpcBigQueryWriteStub>(std::move(channel));
}

storage_v1::StorageError::StorageErrorCode StorageErrorOf(const absl::Status& status) {
  auto rpc = connector::RpcDetailsOf(status);
  if (!rpc) return storage_v1::StorageError::STORAGE_ERROR_CODE_UNSPECIFIED;
  for (const auto& any : rpc->details()) {
    storage_v1::StorageError error;
    if (any.UnpackTo(&error)) return error.code();
  }
  return storage_v1::StorageError::STORAGE_ERROR_CODE_UNSPECIFIED;
}

}  // namespace gcpstream::bigquery
