#ifndef GCPSTREAM_CONNECTOR_UNARY_CALL_H_
#define GCPSTREAM_CONNECTOR_UNARY_CALL_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "gcpstream/connector/grpc_status.h"

namespace gcpstream::connector {

// Starts one unary call on gRPC's callback API. The call owns its context, request and response
// until `done` ran; `done` runs exactly once, on a gRPC thread, with the response or the call's
// status (its gRPC code kept). `timeout` is the whole call's deadline (0: none). `start` makes
// the call, e.g.
//   [stub](auto* context, auto* request, auto* response, auto callback) {
//     stub->async()->CheckAndMutateRow(context, request, response, std::move(callback));
//   }
// Returns a function that cancels the call (best effort; harmless after it ended). Thread-safe.
template <typename Request, typename Response, typename Start>
std::function<void()> StartUnaryCall(std::shared_ptr<const Request> request,
                                     std::chrono::milliseconds timeout, Start start,
                                     std::function<void(absl::StatusOr<Response>)> done) {
  struct Call {
    grpc::ClientContext context;
    std::shared_ptr<const Request> request;
    Response response;
  };
  auto call = std::make_shared<Call>();
  call->request = std::move(request);
  if (timeout.count() > 0) {
    call->context.set_deadline(std::chrono::system_clock::now() + timeout);
  }
  std::weak_ptr<Call> weak = call;
  start(&call->context, call->request.get(), &call->response,
        [call, done = std::move(done)](grpc::Status status) {
          if (!status.ok()) return done(FromGrpcStatus(status));
          done(std::move(call->response));
        });
  return [weak] {
    if (auto c = weak.lock()) c->context.TryCancel();
  };
}

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_UNARY_CALL_H_
