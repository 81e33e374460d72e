#include "gcpstream/tasks/admin/resource_names.h"

#include <fmt/format.h>

#include <vector>

#include "gcpstream/util/absl_fmt.h"
#include "gcpstream/util/sha256.h"

namespace gcpstream::tasks {
namespace {

bool AllOf(std::string_view s, std::string_view extra) {
  for (char c : s) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && extra.find(c) == std::string_view::npos) return false;
  }
  return true;
}

absl::Status Invalid(std::string_view part, std::string_view value, std::string_view rule) {
  return absl::InvalidArgumentError(
      fmt::format("Cloud Tasks {} id '{}' is invalid: {}", part, value, rule));
}

}  // namespace

absl::Status ValidateQueueDestination(const connector::QueueDestination& q) {
  if (q.project.empty() || q.project.size() > 100 || !AllOf(q.project, "-:.")) {
    return Invalid("project", q.project, "1 to 100 letters, digits, '-', ':' or '.'");
  }
  if (q.location.empty() || q.location.size() > 63 || !AllOf(q.location, "-")) {
    return Invalid("location", q.location, "a region id such as us-central1");
  }
  if (q.queue.empty() || q.queue.size() > kMaxQueueIdLength || !AllOf(q.queue, "-")) {
    return Invalid("queue", q.queue, "1 to 100 letters, digits or '-'");
  }
  return absl::OkStatus();
}

absl::Status ValidateTaskId(std::string_view id) {
  if (id.empty() || id.size() > kMaxTaskIdLength || !AllOf(id, "-_")) {
    return Invalid("task", id, "1 to 500 letters, digits, '-' or '_'");
  }
  return absl::OkStatus();
}

absl::StatusOr<connector::QueueDestination> ParseQueueName(std::string_view name) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const std::size_t slash = name.find('/', start);
    parts.push_back(name.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (parts.size() != 6 || parts[0] != "projects" || parts[2] != "locations" ||
      parts[4] != "queues") {
    return absl::InvalidArgumentError(fmt::format(
        "'{}' is not a Cloud Tasks queue name (projects/P/locations/L/queues/Q)", name));
  }
  auto q = connector::QueueDestination::of(std::string(parts[1]), std::string(parts[3]),
                                           std::string(parts[5]));
  if (absl::Status s = ValidateQueueDestination(q); !s.ok()) return s;
  return q;
}

absl::StatusOr<TaskNameParts> SplitTaskName(std::string_view name) {
  const std::size_t at = name.rfind("/tasks/");
  if (at == std::string_view::npos) {
    return absl::InvalidArgumentError(fmt::format(
        "'{}' is not a Cloud Tasks task name (projects/P/locations/L/queues/Q/tasks/ID)", name));
  }
  TaskNameParts out{std::string(name.substr(0, at)), std::string(name.substr(at + 7))};
  if (absl::Status s = ParseQueueName(out.queue).status(); !s.ok()) return s;
  if (absl::Status s = ValidateTaskId(out.id); !s.ok()) return s;
  return out;
}

std::string HashedTaskId(std::string_view key) { return util::Sha256Hex(key); }

std::string TaskName(const connector::QueueDestination& queue, std::string_view key) {
  return queue.resource_name() + "/tasks/" + HashedTaskId(key);
}

}  // namespace gcpstream::tasks
