#include "gcpstream/connector/callback_queue.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <mutex>

namespace gcpstream::connector {

void RetainCallbackQueue() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Deliberately never destroyed: the channel's reference on the callback queue must outlive
    // every other channel. The call carries an expired deadline, so it fails locally at once;
    // making it is what takes the reference.
    struct Holder {
      std::shared_ptr<grpc::Channel> channel;
      std::unique_ptr<grpc::GenericStub> stub;
      grpc::ClientContext context;
      grpc::ByteBuffer request;
      grpc::ByteBuffer response;
    };
    auto* holder = new Holder;
    grpc::Slice empty("", 0);
    holder->request = grpc::ByteBuffer(&empty, 1);
    holder->channel = grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials());
    holder->stub = std::make_unique<grpc::GenericStub>(holder->channel);
    holder->context.set_deadline(std::chrono::system_clock::now());
    holder->stub->UnaryCall(&holder->context, "/gcpstream.RetainCallbackQueue/Noop",
                            grpc::StubOptions(), &holder->request, &holder->response,
                            [](grpc::Status) {});
  });
}

}  // namespace gcpstream::connector
