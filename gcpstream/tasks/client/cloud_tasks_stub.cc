#include "gcpstream/tasks/client/cloud_tasks_stub.h"

#include <atomic>

#include "gcpstream/connector/grpc_status.h"

namespace gcpstream::tasks {
namespace {

using google::cloud::tasks::v2::CloudTasks;
using google::cloud::tasks::v2::CreateTaskRequest;
using google::cloud::tasks::v2::Task;

class GrpcCloudTasksStub final : public CloudTasksStub {
 public:
  explicit GrpcCloudTasksStub(std::vector<std::shared_ptr<grpc::Channel>> channels) {
    for (auto& c : channels) stubs_.push_back(CloudTasks::NewStub(std::move(c)));
  }

  std::function<void()> async_create_task(std::shared_ptr<const CreateTaskRequest> request,
                                          std::chrono::milliseconds timeout,
                                          CreateCallback done) override {
    struct Call {
      grpc::ClientContext context;
      std::shared_ptr<const CreateTaskRequest> request;
      Task response;
    };
    auto call = std::make_shared<Call>();
    call->request = std::move(request);
    if (timeout.count() > 0) {
      call->context.set_deadline(std::chrono::system_clock::now() + timeout);
    }
    const std::size_t pick = next_.fetch_add(1, std::memory_order_relaxed) % stubs_.size();
    stubs_[pick]->async()->CreateTask(&call->context, call->request.get(), &call->response,
                                      [call, done = std::move(done)](grpc::Status status) {
                                        if (status.ok()) {
                                          done(std::move(call->response));
                                        } else {
                                          done(connector::FromGrpcStatus(status));
                                        }
                                      });
    std::weak_ptr<Call> weak = call;
    return [weak] {
      if (auto c = weak.lock()) c->context.TryCancel();
    };
  }

 private:
  std::vector<std::unique_ptr<CloudTasks::Stub>> stubs_;
  std::atomic<std::size_t> next_{0};
};

}  // namespace

std::shared_ptr<CloudTasksStub> MakeGrpcCloudTasksStub(
    std::vector<std::shared_ptr<grpc::Channel>> channels) {
  return std::make_shared<GrpcCloudTasksStub>(std::move(channels));
}

}  // namespace gcpstream::tasks
