#include "gcpstream/tasks/sink/cloud_tasks_writer_options.h"

#include <fmt/format.h>

#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::tasks {
namespace {

absl::Status Budget(const char* prefix, std::chrono::milliseconds initial,
                    std::chrono::milliseconds max, int attempts) {
  if (initial.count() <= 0) {
    return absl::InvalidArgumentError(fmt::format("{}_initial_backoff must be positive", prefix));
  }
  if (max < initial) {
    return absl::InvalidArgumentError(
        fmt::format("{0}_max_backoff ({1} ms) must be >= {0}_initial_backoff ({2} ms)", prefix,
                    max.count(), initial.count()));
  }
  if (attempts < 1) {
    return absl::InvalidArgumentError(fmt::format(
        "{}_max_attempts must be >= 1 (it counts the first attempt); got {}", prefix, attempts));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CloudTasksWriterOptions::validate() const {
  if (max_in_flight_tasks < 1) {
    return absl::InvalidArgumentError(
        fmt::format("max_in_flight_tasks must be >= 1; got {}", max_in_flight_tasks));
  }
  if (max_in_flight_bytes < 1) {
    return absl::InvalidArgumentError("max_in_flight_bytes must be >= 1");
  }
  if (channel_pool_size && (*channel_pool_size < 1 || *channel_pool_size > 256)) {
    return absl::InvalidArgumentError(
        fmt::format("channel_pool_size must be between 1 and 256; got {}", *channel_pool_size));
  }
  if (absl::Status s =
          Budget("retry", retry_initial_backoff, retry_max_backoff, retry_max_attempts);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Budget("not_found", not_found_initial_backoff, not_found_max_backoff,
                              not_found_max_attempts);
      !s.ok()) {
    return s;
  }
  if (max_consecutive_rejections < -1 || max_consecutive_rejections == 0) {
    return absl::InvalidArgumentError(
        "max_consecutive_rejections must be >= 1, or -1 to remove the bound");
  }
  if (stall_warning_interval.count() <= 0) {
    return absl::InvalidArgumentError("stall_warning_interval must be positive");
  }
  if (shutdown_timeout.count() <= 0) {
    return absl::InvalidArgumentError("shutdown_timeout must be positive");
  }
  return absl::OkStatus();
}

CreateTaskRetrySettings CloudTasksWriterOptions::retry_settings() const {
  CreateTaskRetrySettings s;
  s.transient.initial_backoff = retry_initial_backoff;
  s.transient.max_backoff = retry_max_backoff;
  // RecoveryBackoff hands out delays between attempts: N attempts need N-1 delays.
  s.transient.max_attempts = retry_max_attempts - 1;
  s.not_found.initial_backoff = not_found_initial_backoff;
  s.not_found.max_backoff = not_found_max_backoff;
  s.not_found.max_attempts = not_found_max_attempts - 1;
  return s;
}

}  // namespace gcpstream::tasks
