#ifndef GCPSTREAM_PUBSUB_CLIENT_PUBLISHER_STUB_H_
#define GCPSTREAM_PUBSUB_CLIENT_PUBLISHER_STUB_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "google/pubsub/v1/pubsub.grpc.pb.h"

namespace gcpstream::pubsub {

// The seam under the publisher: one Publish RPC, asynchronously. Unit tests put a fake here;
// the real one is the generated gRPC stub's callback API. Thread-safe.
class PublisherStub {
 public:
  using PublishCallback = std::function<void(absl::StatusOr<google::pubsub::v1::PublishResponse>)>;
  virtual ~PublisherStub() = default;
  // `done` runs exactly once, on an arbitrary thread. The request is shared, not copied (a
  // retry sends the same one again); it must not change until `done` ran. The returned function
  // cancels the call (best effort; `done` still runs, with CANCELLED).
  virtual std::function<void()> async_publish(
      std::shared_ptr<const google::pubsub::v1::PublishRequest> request,
      std::chrono::milliseconds timeout, PublishCallback done) = 0;
};

// The real stub over a channel.
std::shared_ptr<PublisherStub> MakeGrpcPublisherStub(std::shared_ptr<grpc::Channel> channel);

// grpc::Status -> absl::Status, keeping the code and message.
absl::Status FromGrpc(const grpc::Status& status);

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_CLIENT_PUBLISHER_STUB_H_
