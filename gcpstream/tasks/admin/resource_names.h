#ifndef GCPSTREAM_TASKS_ADMIN_RESOURCE_NAMES_H_
#define GCPSTREAM_TASKS_ADMIN_RESOURCE_NAMES_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/connector/destinations.h"

// Cloud Tasks resource names, as the v2 API reference ("projects.locations.queues.tasks")
// documents them:
//   projects/PROJECT_ID/locations/LOCATION_ID/queues/QUEUE_ID/tasks/TASK_ID
// PROJECT_ID: letters, digits, '-', ':' and '.'; LOCATION_ID: a region such as us-central1;
// QUEUE_ID: letters, digits and '-', at most 100 characters; TASK_ID: letters, digits, '-' and
// '_', at most 500 characters.
namespace gcpstream::tasks {

inline constexpr std::size_t kMaxQueueIdLength = 100;
inline constexpr std::size_t kMaxTaskIdLength = 500;

// INVALID_ARGUMENT naming the part (project, location, queue) and the rule it breaks.
absl::Status ValidateQueueDestination(const connector::QueueDestination& queue);
// INVALID_ARGUMENT when `id` is not a valid TASK_ID.
absl::Status ValidateTaskId(std::string_view id);

// The parts of a queue name "projects/p/locations/l/queues/q"; INVALID_ARGUMENT otherwise.
absl::StatusOr<connector::QueueDestination> ParseQueueName(std::string_view name);
// The queue part of a task name ("…/queues/q/tasks/id" → "…/queues/q") and the id;
// INVALID_ARGUMENT when `name` is not a task name.
struct TaskNameParts {
  std::string queue;
  std::string id;
};
absl::StatusOr<TaskNameParts> SplitTaskName(std::string_view name);

// The task id the sink derives from a record's deduplication key: the lowercase hex SHA-256 of
// the key's bytes (64 characters of [0-9a-f]). Google recommends hashed ids: sequential ids or
// prefixes raise latency and error rates for the whole queue (CreateTask reference, "name").
std::string HashedTaskId(std::string_view key);
// The full task name of `key` in `queue`.
std::string TaskName(const connector::QueueDestination& queue, std::string_view key);

}  // namespace gcpstream::tasks

#endif  // GCPSTREAM_TASKS_ADMIN_RESOURCE_NAMES_H_
