#ifndef GCPSTREAM_TESTS_FAKES_CLOUD_TASKS_FAKE_H_
#define GCPSTREAM_TESTS_FAKES_CLOUD_TASKS_FAKE_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/cloud/tasks/v2/cloudtasks.grpc.pb.h"

namespace gcpstream::testing {

// How the fake behaves beyond the documented API: its clock and the faults it injects. Every
// field can be changed while it runs (CloudTasksFake::set_options).
struct CloudTasksFakeOptions {
  // A CreateTask arriving while this many are being served answers RESOURCE_EXHAUSTED, without
  // applying [0: no limit].
  int max_concurrent_creates = 0;
  // CreateTask calls per second; above it RESOURCE_EXHAUSTED, without applying [0: no limit].
  // A token bucket holding one second's worth.
  double max_creates_per_second = 0;
  // The Nth CreateTask (1-based, counting every call) answers UNAVAILABLE without applying
  // [0: never].
  int unavailable_on_call = 0;
  // Every Nth CreateTask applies, then answers DEADLINE_EXCEEDED: created, but the answer lost
  // [0: never].
  int lose_answer_every = 0;
  // Each CreateTask takes this long before it is answered, so concurrency builds up [0].
  std::chrono::milliseconds create_latency{0};
  // How long a task name stays reserved after its task was deleted or executed. The v2
  // CreateTaskRequest reference says about one hour for queues made through the API.
  absl::Duration name_retention = absl::Hours(1);
  // The fake's notion of now (task names' retention, create and schedule times) [absl::Now].
  std::function<absl::Time()> clock;
};

// An in-process Cloud Tasks v2 service (google.cloud.tasks.v2.CloudTasks) that follows the
// public API reference, for tests and for trying the sink by hand (cloud_tasks_fake_main.cc).
// What it implements, each pinned by tests/integration/tasks/cloud_tasks_fake_test.cc:
//  - queues: CreateQueue, GetQueue, ListQueues, DeleteQueue, PauseQueue, ResumeQueue,
//    PurgeQueue; a missing queue answers NOT_FOUND; a paused queue still accepts tasks;
//  - CreateTask with an HTTP or an App Engine target; the server names an unnamed task; a
//    caller-chosen name answers ALREADY_EXISTS while it exists and for `name_retention` after
//    it was deleted or executed; the documented limits (100 KB task, schedule time at most 30
//    days ahead, name format, body only under body-carrying methods, 2083-character URLs,
//    dispatch deadline range) answer INVALID_ARGUMENT;
//  - GetTask, ListTasks (paged), DeleteTask; the BASIC view (the default) leaves out bodies and
//    headers, FULL includes them; RunTask executes the task as a successful dispatch would
//    (it is removed and its name stays reserved);
//  - the faults of CloudTasksFakeOptions.
// Not implemented: dispatching to HTTP handlers, UpdateQueue, IAM methods (UNIMPLEMENTED).
// Thread-safe.
class CloudTasksFake {
 public:
  using Task = google::cloud::tasks::v2::Task;

  // Listens on `host`:`port` (0: any free port).
  static absl::StatusOr<std::unique_ptr<CloudTasksFake>> Start(
      CloudTasksFakeOptions options = {}, int port = 0, const std::string& host = "127.0.0.1");
  ~CloudTasksFake();

  // host:port clients connect to.
  std::string endpoint() const;
  void set_options(CloudTasksFakeOptions options);

  // Creates a queue directly (RUNNING); ALREADY_EXISTS if it exists.
  absl::Status add_queue(const std::string& queue_name);
  // Every task of a queue, FULL view, in creation order.
  std::vector<Task> tasks(const std::string& queue_name) const;
  // CreateTask calls received (refused ones included), and the most served at once.
  std::int64_t create_calls() const;
  int peak_concurrent_creates() const;
  // Calls answered RESOURCE_EXHAUSTED because of a limit.
  std::int64_t refused_calls() const;
  // How many of the create calls applied a task (lost answers included).
  std::int64_t tasks_created() const;

  void shutdown();

  struct State;

 private:
  CloudTasksFake() = default;
  std::shared_ptr<State> state_;
  std::unique_ptr<grpc::Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string endpoint_;
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_FAKES_CLOUD_TASKS_FAKE_H_
