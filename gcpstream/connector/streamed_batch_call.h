#ifndef GCPSTREAM_CONNECTOR_STREAMED_BATCH_CALL_H_
#define GCPSTREAM_CONNECTOR_STREAMED_BATCH_CALL_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <utility>

#include "gcpstream/connector/grpc_status.h"
#include "gcpstream/connector/request_batcher.h"

namespace gcpstream::connector {

// Runs one server-streaming call whose responses report elements of the request by index
// (MutateRows entries, BatchWrite mutation groups) and gathers them into a BatchCallResult.
// `start` issues the call on the generated stub's callback API
// (`stub.async()->Method(context, request, reactor)`); `read` adds one response's verdicts to
// the result. `done` runs exactly once, on a gRPC thread, after the call ended. `timeout` 0
// means no deadline. Returns a function that cancels the call (best effort; `done` still runs).
template <typename Request, typename Response>
std::function<void()> StartStreamedBatchCall(
    std::shared_ptr<const Request> request, std::chrono::milliseconds timeout,
    std::function<void(grpc::ClientContext*, const Request*, grpc::ClientReadReactor<Response>*)>
        start,
    std::function<void(const Response&, BatchCallResult&)> read,
    std::function<void(BatchCallResult)> done) {
  class Reactor final : public grpc::ClientReadReactor<Response> {
   public:
    Reactor(std::shared_ptr<const Request> request,
            std::function<void(const Response&, BatchCallResult&)> read,
            std::function<void(BatchCallResult)> done)
        : request_(std::move(request)), read_(std::move(read)), done_(std::move(done)) {}
    void OnReadDone(bool ok) override {
      if (!ok) return;
      read_(response_, result_);
      this->StartRead(&response_);
    }
    void OnDone(const grpc::Status& status) override {
      result_.rpc = FromGrpcStatus(status);
      auto done = std::move(done_);
      auto result = std::move(result_);
      self_.reset();  // may delete this
      done(std::move(result));
    }
    grpc::ClientContext context_;
    std::shared_ptr<const Request> request_;
    Response response_;
    BatchCallResult result_;
    std::function<void(const Response&, BatchCallResult&)> read_;
    std::function<void(BatchCallResult)> done_;
    std::shared_ptr<Reactor> self_;  // keeps the reactor alive until OnDone
  };
  auto reactor = std::make_shared<Reactor>(std::move(request), std::move(read), std::move(done));
  reactor->self_ = reactor;
  if (timeout.count() > 0) {
    reactor->context_.set_deadline(std::chrono::system_clock::now() + timeout);
  }
  std::weak_ptr<Reactor> weak = reactor;
  start(&reactor->context_, reactor->request_.get(), reactor.get());
  reactor->StartRead(&reactor->response_);
  reactor->StartCall();
  return [weak] {
    if (auto r = weak.lock()) r->context_.TryCancel();
  };
}

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_STREAMED_BATCH_CALL_H_
