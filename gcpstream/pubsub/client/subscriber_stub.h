#ifndef GCPSTREAM_PUBSUB_CLIENT_SUBSCRIBER_STUB_H_
#define GCPSTREAM_PUBSUB_CLIENT_SUBSCRIBER_STUB_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>

#include "absl/status/status.h"
#include "google/pubsub/v1/pubsub.grpc.pb.h"

namespace gcpstream::pubsub {

// One StreamingPull call. Blocking, in the gRPC synchronous style: one thread may read while
// another writes; cancel() is callable from any thread and makes a blocked read() return false.
class StreamingPullStream {
 public:
  virtual ~StreamingPullStream() = default;
  // Sends a request on the stream (the first one names the subscription). False when the
  // stream is broken; finish() then says why.
  virtual bool write(const google::pubsub::v1::StreamingPullRequest& request) = 0;
  // Blocks for the next response; false at the end of the stream.
  virtual bool read(google::pubsub::v1::StreamingPullResponse* response) = 0;
  virtual void cancel() = 0;
  // After read() returned false: the stream's final status (the gRPC code preserved).
  virtual absl::Status finish() = 0;
};

// The seam under the subscriber: the streaming pull plus the two unary RPCs that settle
// messages. Unit tests put a fake here; the real one is the generated stub. Thread-safe.
class SubscriberStub {
 public:
  virtual ~SubscriberStub() = default;
  virtual std::unique_ptr<StreamingPullStream> streaming_pull() = 0;
  // Blocking unary calls with a deadline of `timeout`.
  virtual absl::Status acknowledge(const google::pubsub::v1::AcknowledgeRequest& request,
                                   std::chrono::milliseconds timeout) = 0;
  virtual absl::Status modify_ack_deadline(
      const google::pubsub::v1::ModifyAckDeadlineRequest& request,
      std::chrono::milliseconds timeout) = 0;
};

// The stub over gRPC. It makes blocking calls only, so its channel is created with
// connector::CallApi::kBlockingOnly (a callback call added here must change that).
std::shared_ptr<SubscriberStub> MakeGrpcSubscriberStub(std::shared_ptr<grpc::Channel> channel);

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_CLIENT_SUBSCRIBER_STUB_H_
