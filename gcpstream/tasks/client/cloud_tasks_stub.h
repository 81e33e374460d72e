#ifndef GCPSTREAM_TASKS_CLIENT_CLOUD_TASKS_STUB_H_
#define GCPSTREAM_TASKS_CLIENT_CLOUD_TASKS_STUB_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "google/cloud/tasks/v2/cloudtasks.grpc.pb.h"

namespace gcpstream::tasks {

// Where production Cloud Tasks listens.
inline constexpr char kCloudTasksTarget[] = "cloudtasks.googleapis.com:443";

// The seam under the task creator: one CreateTask RPC, asynchronously. Unit tests put a fake
// here; the real one is the generated stub's callback API. Thread-safe.
class CloudTasksStub {
 public:
  using CreateCallback = std::function<void(absl::StatusOr<google::cloud::tasks::v2::Task>)>;
  virtual ~CloudTasksStub() = default;
  // `done` runs exactly once, on an arbitrary thread (possibly the caller's). The request is
  // shared and must not change until `done` ran (a retry sends the same one again). `timeout`
  // is the attempt's deadline (0 = none). The returned function cancels the call (best effort;
  // `done` still runs, with CANCELLED).
  virtual std::function<void()> async_create_task(
      std::shared_ptr<const google::cloud::tasks::v2::CreateTaskRequest> request,
      std::chrono::milliseconds timeout, CreateCallback done) = 0;
};

// The real stub over a pool of channels, used round-robin (one call per channel pick). One
// HTTP/2 channel carries about 100 concurrent streams, so the pool size bounds how many creates
// are really concurrent (docs/cloud-tasks.md, "Tuning"). `channels` must not be empty.
std::shared_ptr<CloudTasksStub> MakeGrpcCloudTasksStub(
    std::vector<std::shared_ptr<grpc::Channel>> channels);

}  // namespace gcpstream::tasks

#endif  // GCPSTREAM_TASKS_CLIENT_CLOUD_TASKS_STUB_H_
