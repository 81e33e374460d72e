#include "gcpstream/tasks/client/cloud_tasks_stub.h"

#include <atomic>

#include "gcpstream/connector/grpc_status.h"
#include "gcpstream/connector/unary_call.h"

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
    const std::size_t pick = next_.fetch_add(1, std::memory_order_relaxed) % stubs_.size();
    return connector::StartUnaryCall<CreateTaskRequest, Task>(
        std::move(request), timeout,
        [stub = stubs_[pick].get()](grpc::ClientContext* context, const CreateTaskRequest* r,
                                    Task* response, std::function<void(grpc::Status)> cb) {
          stub->async()->CreateTask(context, r, response, std::move(cb));
        },
        std::move(done));
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
