#ifndef GCPSTREAM_TASKS_ADMIN_QUEUE_ADMIN_H_
#define GCPSTREAM_TASKS_ADMIN_QUEUE_ADMIN_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/connector/destinations.h"
#include "google/cloud/tasks/v2/cloudtasks.grpc.pb.h"

namespace gcpstream::tasks {

// Queue management and task inspection, for tools, tests and setup scripts. The sink never
// creates a queue: an auto-created queue would carry Cloud Tasks' default rate limits, dropping
// the pacing the queue exists for, and a deleted queue name cannot be reused for days.
//
// Every call blocks the caller for at most `timeout` (default 30 s) and returns the service's
// status with its gRPC code (NOT_FOUND for a missing queue, ALREADY_EXISTS for a queue that
// exists). Thread-safe.
class QueueAdmin {
 public:
  using Queue = google::cloud::tasks::v2::Queue;
  using Task = google::cloud::tasks::v2::Task;

  explicit QueueAdmin(std::shared_ptr<grpc::Channel> channel,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30));

  absl::StatusOr<Queue> create_queue(const connector::QueueDestination& queue);
  absl::StatusOr<Queue> get_queue(const connector::QueueDestination& queue);
  absl::StatusOr<Queue> pause_queue(const connector::QueueDestination& queue);
  absl::StatusOr<Queue> resume_queue(const connector::QueueDestination& queue);
  absl::StatusOr<Queue> purge_queue(const connector::QueueDestination& queue);
  absl::Status delete_queue(const connector::QueueDestination& queue);

  // Every task of the queue with the FULL view (bodies and headers included), following page
  // tokens.
  absl::StatusOr<std::vector<Task>> list_tasks(const connector::QueueDestination& queue);
  absl::StatusOr<Task> get_task(const std::string& name);
  absl::Status delete_task(const std::string& name);
  // Forces a dispatch now (RunTask); a successful dispatch deletes the task.
  absl::StatusOr<Task> run_task(const std::string& name);

 private:
  void prepare(grpc::ClientContext& context) const;
  std::unique_ptr<google::cloud::tasks::v2::CloudTasks::Stub> stub_;
  std::chrono::milliseconds timeout_;
};

}  // namespace gcpstream::tasks

#endif  // GCPSTREAM_TASKS_ADMIN_QUEUE_ADMIN_H_
