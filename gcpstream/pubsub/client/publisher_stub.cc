#include "gcpstream/pubsub/client/publisher_stub.h"

#include "gcpstream/connector/grpc_status.h"

namespace gcpstream::pubsub {

absl::Status FromGrpc(const grpc::Status& status) { return connector::FromGrpcStatus(status); }

namespace {

class GrpcPublisherStub final : public PublisherStub {
 public:
  explicit GrpcPublisherStub(std::shared_ptr<grpc::Channel> channel)
      : stub_(google::pubsub::v1::Publisher::NewStub(std::move(channel))) {}

  std::function<void()> async_publish(
      std::shared_ptr<const google::pubsub::v1::PublishRequest> request,
      std::chrono::milliseconds timeout, PublishCallback done) override {
    struct Call {
      grpc::ClientContext context;
      std::shared_ptr<const google::pubsub::v1::PublishRequest> request;
      google::pubsub::v1::PublishResponse response;
    };
    auto call = std::make_shared<Call>();
    call->request = std::move(request);
    if (timeout.count() > 0) {
      call->context.set_deadline(std::chrono::system_clock::now() + timeout);
    }
    stub_->async()->Publish(&call->context, call->request.get(), &call->response,
                            [call, done = std::move(done)](grpc::Status status) {
                              if (status.ok()) {
                                done(std::move(call->response));
                              } else {
                                done(FromGrpc(status));
                              }
                            });
    std::weak_ptr<Call> weak = call;
    return [weak] {
      if (auto c = weak.lock()) c->context.TryCancel();
    };
  }

 private:
  std::unique_ptr<google::pubsub::v1::Publisher::Stub> stub_;
};

}  // namespace

std::shared_ptr<PublisherStub> MakeGrpcPublisherStub(std::shared_ptr<grpc::Channel> channel) {
  return std::make_shared<GrpcPublisherStub>(std::move(channel));
}

}  // namespace gcpstream::pubsub
