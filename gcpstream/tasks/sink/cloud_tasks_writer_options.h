#ifndef GCPSTREAM_TASKS_SINK_CLOUD_TASKS_WRITER_OPTIONS_H_
#define GCPSTREAM_TASKS_SINK_CLOUD_TASKS_WRITER_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "gcpstream/tasks/client/task_creator.h"

namespace gcpstream::tasks {

// The Cloud Tasks writer's options; every one has a default ([in brackets]). There are no rate
// options on purpose: dispatch pacing (maxDispatchesPerSecond, maxConcurrentDispatches, the
// retry policy) is the queue's configuration. See docs/cloud-tasks.md.
struct CloudTasksWriterOptions {
  // Outstanding creates per writer subtask: in flight plus waiting out a retry backoff [1000].
  // At the cap write() yields to the mailbox until creates complete.
  std::int64_t max_in_flight_tasks = 1000;
  // Serialized bytes of outstanding creates [64 MiB] (the shared writer's byte cap).
  std::int64_t max_in_flight_bytes = 64LL * 1024 * 1024;
  // gRPC channels of the writer's one client [unset: one channel]. One channel carries about
  // 100 concurrent creates, so this bounds how much of max_in_flight_tasks is really
  // concurrent; size it at about one channel per 100 concurrent creates wanted. Rejected beside
  // emulator_endpoint (an emulator gets one plaintext channel).
  std::optional<int> channel_pool_size;

  // UNAVAILABLE / DEADLINE_EXCEEDED / RESOURCE_EXHAUSTED budget: first backoff [100 ms],
  // doubling up to [10 s] (±25 % jitter), [8] attempts in total, the first included.
  // Exhausting it fails the job.
  std::chrono::milliseconds retry_initial_backoff{100};
  std::chrono::milliseconds retry_max_backoff{10000};
  int retry_max_attempts = 8;
  // NOT_FOUND budget: [500 ms] doubling up to [2 s], [3] attempts. Short so that a mistyped
  // queue fails quickly; exhausting it fails the job naming the queue.
  std::chrono::milliseconds not_found_initial_backoff{500};
  std::chrono::milliseconds not_found_max_backoff{2000};
  int not_found_max_attempts = 3;

  // Per-queue recordsSend / sendErrors counters [off]. Counters are never unregistered, so
  // keep it off with a per-record resolver over many queues.
  bool per_destination_metrics = false;
  // INVALID_ARGUMENT refusals in a row before the job fails [-1: no bound]. Off by default, as
  // the Cloud Tasks connector specifies: under a dropping handler a serializer that makes every
  // task invalid shows as a rate of numRecordsSendErrors, not as a failed job. Set it to fail
  // such a job instead.
  int max_consecutive_rejections = -1;
  // A WARN names the wait while no create completes for this long [60 s].
  std::chrono::milliseconds stall_warning_interval{std::chrono::seconds(60)};
  // Bound on the writer's close (creates in flight are cancelled) [30 s].
  std::chrono::milliseconds shutdown_timeout{std::chrono::seconds(30)};

  // INVALID_ARGUMENT naming the option of the first invalid value.
  absl::Status validate() const;
  // What the task creators get.
  CreateTaskRetrySettings retry_settings() const;
};

}  // namespace gcpstream::tasks

#endif  // GCPSTREAM_TASKS_SINK_CLOUD_TASKS_WRITER_OPTIONS_H_
