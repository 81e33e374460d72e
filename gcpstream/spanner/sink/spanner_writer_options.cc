#include "gcpstream/spanner/sink/spanner_writer_options.h"

#include <fmt/format.h>

#include <algorithm>

namespace gcpstream::spanner {
namespace {

constexpr double kJitter = 0.25;

absl::Status Range(const char* name, std::int64_t value, std::int64_t low, std::int64_t high,
                   const char* why) {
  if (value < low || value > high) {
    return absl::InvalidArgumentError(
        fmt::format("{} must be between {} and {} ({}); got {}", name, low, high, why, value));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SpannerWriterOptions::validate() const {
  for (const absl::Status& s : {
           Range("max_batch_cells", max_batch_cells, 1, kMaxBatchCells,
                 "80,000 is Spanner's mutations-per-mutation-group quota"),
           Range("max_batch_mutations", max_batch_mutations, 1, kMaxBatchCells,
                 "every mutation costs at least one cell, so the cell ceiling bounds it"),
           Range("max_batch_bytes", max_batch_bytes, 1, kMaxBatchBytes,
                 "Spanner refuses a request of more than 104,857,600 bytes"),
           Range("retry_max_attempts", retry_max_attempts, 1, 1000, "the first attempt included"),
           Range("max_in_flight_mutations", max_in_flight_mutations, 1, 100'000'000, "per subtask"),
           Range("max_in_flight_bytes", max_in_flight_bytes, 1, 1LL << 40, "per subtask"),
           Range("max_sessions", max_sessions, 1, 1000, "BatchWrite calls in flight"),
       }) {
    if (!s.ok()) return s;
  }
  if (max_commit_delay &&
      (max_commit_delay->count() < 0 || *max_commit_delay > std::chrono::milliseconds(500))) {
    return absl::InvalidArgumentError(
        fmt::format("max_commit_delay must be between 0 and 500 ms (what Spanner accepts); got "
                    "{} ns",
                    max_commit_delay->count()));
  }
  if (retry_initial_backoff < std::chrono::milliseconds(1)) {
    return absl::InvalidArgumentError("retry_initial_backoff must be at least 1 ms");
  }
  if (retry_max_backoff < retry_initial_backoff) {
    return absl::InvalidArgumentError(
        fmt::format("retry_max_backoff ({} ms) must be >= retry_initial_backoff ({} ms)",
                    retry_max_backoff.count(), retry_initial_backoff.count()));
  }
  if (batch_write_timeout < std::chrono::milliseconds(1)) {
    return absl::InvalidArgumentError("batch_write_timeout must be at least 1 ms");
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

std::vector<std::string> SpannerWriterOptions::warnings() const {
  std::vector<std::string> out;
  if (max_batch_mutations > max_batch_cells) {
    out.push_back(fmt::format(
        "Spanner sink: max_batch_mutations ({}) is above max_batch_cells ({}), so it can never "
        "bind: every mutation costs at least one cell and the cell limit is reached first",
        max_batch_mutations, max_batch_cells));
  }
  if (max_commit_delay && max_commit_delay->count() > 0) {
    out.push_back(
        "Spanner sink: max_commit_delay is set, but BatchWriteRequest has no commit-delay "
        "field, so it is not sent: the service applies its own commit handling");
  }
  return out;
}

std::chrono::milliseconds SpannerWriterOptions::worst_case_write_time() const {
  double total =
      static_cast<double>(retry_max_attempts) * static_cast<double>(batch_write_timeout.count());
  double backoff = static_cast<double>(retry_initial_backoff.count());
  for (int i = 1; i < retry_max_attempts; ++i) {
    total += (1.0 + kJitter) * std::min(backoff, static_cast<double>(retry_max_backoff.count()));
    backoff *= 2;
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(total));
}

}  // namespace gcpstream::spanner
