#include "gcpstream/bigquery/sink/bigquery_writer_options.h"

#include <fmt/format.h>

namespace gcpstream::bigquery {
namespace {

// The Storage Write API's request bound (10 MB) less room for the request's own fields.
constexpr std::int64_t kMaxAppendRequestBytes = 9 * 1000 * 1000;

absl::Status Invalid(const char* option, const std::string& rule) {
  return absl::InvalidArgumentError(fmt::format("BigQuery sink option {}: {}", option, rule));
}

}  // namespace

absl::Status BigQueryWriterOptions::validate() const {
  if (max_append_request_bytes < 1 || max_append_request_bytes > kMaxAppendRequestBytes) {
    return Invalid("max_append_request_bytes",
                   fmt::format("must be 1 .. {} (an AppendRows request carries at most 10 MB)",
                               kMaxAppendRequestBytes));
  }
  if (retry_initial_delay.count() < 0 || retry_max_delay.count() < 0 ||
      max_retry_duration.count() < 0) {
    return Invalid("retry_*", "delays must not be negative");
  }
  if (retry_delay_multiplier < 1.0) return Invalid("retry_delay_multiplier", "must be >= 1");
  if (retry_max_attempts < 1) return Invalid("retry_max_attempts", "must be >= 1");
  if (absl::Status s = recovery.validate(); !s.ok()) return s;
  if (max_inflight_requests < 1) return Invalid("max_inflight_requests", "must be >= 1");
  if (max_inflight_bytes < 1) return Invalid("max_inflight_bytes", "must be >= 1");
  if (max_in_flight_rows < 1) return Invalid("max_in_flight_rows", "must be >= 1");
  if (max_in_flight_bytes < 1) return Invalid("max_in_flight_bytes", "must be >= 1");
  if (destination_idle_timeout.count() <= 0) {
    return Invalid("destination_idle_timeout", "must be positive");
  }
  if (shutdown_timeout.count() <= 0) return Invalid("shutdown_timeout", "must be positive");
  if (max_consecutive_rejections < -1) {
    return Invalid("max_consecutive_rejections", "must be >= 0, or -1 to disable");
  }
  return absl::OkStatus();
}

}  // namespace gcpstream::bigquery
