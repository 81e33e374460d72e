#include "gcpstream/pubsub/client/subscriber_stub.h"

#include <mutex>

#include "gcpstream/pubsub/client/publisher_stub.h"

namespace gcpstream::pubsub {
namespace {

using google::pubsub::v1::Subscriber;

class GrpcStreamingPull final : public StreamingPullStream {
 public:
  explicit GrpcStreamingPull(Subscriber::Stub& stub) : stream_(stub.StreamingPull(&context_)) {}

  bool write(const google::pubsub::v1::StreamingPullRequest& request) override {
    std::lock_guard lock(write_mu_);  // gRPC allows one writer at a time
    return stream_->Write(request);
  }
  bool read(google::pubsub::v1::StreamingPullResponse* response) override {
    return stream_->Read(response);
  }
  void cancel() override { context_.TryCancel(); }
  absl::Status finish() override {
    std::lock_guard lock(write_mu_);
    if (!finished_) {
      stream_->WritesDone();
      status_ = FromGrpc(stream_->Finish());
      finished_ = true;
    }
    return status_;
  }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<google::pubsub::v1::StreamingPullRequest,
                                           google::pubsub::v1::StreamingPullResponse>>
      stream_;
  std::mutex write_mu_;
  bool finished_ = false;
  absl::Status status_;
};

class GrpcSubscriberStub final : public SubscriberStub {
 public:
  explicit GrpcSubscriberStub(std::shared_ptr<grpc::Channel> channel)
      : stub_(Subscriber::NewStub(std::move(channel))) {}

  std::unique_ptr<StreamingPullStream> streaming_pull() override {
    return std::make_unique<GrpcStreamingPull>(*stub_);
  }
  absl::Status acknowledge(const google::pubsub::v1::AcknowledgeRequest& request,
                           std::chrono::milliseconds timeout) override {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    google::protobuf::Empty empty;
    return FromGrpc(stub_->Acknowledge(&context, request, &empty));
  }
  absl::Status modify_ack_deadline(const google::pubsub::v1::ModifyAckDeadlineRequest& request,
                                   std::chrono::milliseconds timeout) override {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    google::protobuf::Empty empty;
    return FromGrpc(stub_->ModifyAckDeadline(&context, request, &empty));
  }

 private:
  std::unique_ptr<Subscriber::Stub> stub_;
};

}  // namespace

std::shared_ptr<SubscriberStub> MakeGrpcSubscriberStub(std::shared_ptr<grpc::Channel> channel) {
  return std::make_shared<GrpcSubscriberStub>(std::move(channel));
}

}  // namespace gcpstream::pubsub
