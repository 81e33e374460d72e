#include "gcpstream/bigquery/sink/append_retry.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/cord.h"

namespace gcpstream::bigquery {

bool TransientCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kUnknown:
      return true;
    default:
      return false;
  }
}

bool RetriableAppend(const AppendOutcome& o) {
  if (!o.answered) return true;
  return TransientCode(o.status.code()) && o.response.row_errors_size() == 0;
}

std::chrono::milliseconds AppendRetryDelay(const BigQueryWriterOptions& options, int attempt) {
  const double factor = std::pow(options.retry_delay_multiplier, std::max(0, attempt - 1));
  return std::min<std::chrono::milliseconds>(
      options.retry_max_delay,
      std::chrono::milliseconds(static_cast<std::int64_t>(
          static_cast<double>(options.retry_initial_delay.count()) * factor)));
}

absl::Status MarkedStatus(absl::Status status, const char* payload) {
  status.SetPayload(payload, absl::Cord("1"));
  return status;
}

}  // namespace gcpstream::bigquery
