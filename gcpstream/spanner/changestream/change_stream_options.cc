#include "gcpstream/spanner/changestream/change_stream_options.h"

#include <fmt/format.h>

#include "absl/strings/ascii.h"
#include "gcpstream/spanner/client/value.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::spanner {

absl::Status SpannerChangeStreamOptions::validate() const {
  auto bad = [](std::string m) {
    return absl::InvalidArgumentError("SpannerChangeStreamSource: " + std::move(m));
  };
  if (auto s = start_position.validate("SpannerChangeStreamSource"); !s.ok()) return s;
  if (resume_fallback) {
    if (auto s = resume_fallback->validate("SpannerChangeStreamSource"); !s.ok()) return s;
  }
  if (absent_retention_fallback <= kRetentionSafetyMargin) {
    return bad(
        fmt::format("absent_retention_fallback ({}) must be longer than the one-minute "
                    "safety margin at the retention edge",
                    absl::FormatDuration(absent_retention_fallback)));
  }
  if (heartbeat_interval < std::chrono::seconds(1) ||
      heartbeat_interval > std::chrono::minutes(5)) {
    return bad(fmt::format("heartbeat_interval must be from 1 s to 5 min, got {} ms",
                           heartbeat_interval.count()));
  }
  if (max_concurrent_queries_per_subtask < 1 ||
      max_concurrent_queries_per_subtask > kMaxQueriesPerSubtask) {
    return bad(fmt::format(
        "max_concurrent_queries_per_subtask must be from 1 to {} (each running query holds a "
        "session of the reader's pool for as long as it runs), got {}",
        kMaxQueriesPerSubtask, max_concurrent_queries_per_subtask));
  }
  if (rpc_priority != google::spanner::v1::RequestOptions::PRIORITY_LOW &&
      rpc_priority != google::spanner::v1::RequestOptions::PRIORITY_MEDIUM &&
      rpc_priority != google::spanner::v1::RequestOptions::PRIORITY_HIGH) {
    return bad("rpc_priority must be LOW, MEDIUM or HIGH");
  }
  return absl::OkStatus();
}

absl::Status ValidateChangeStreamName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 128 && absl::ascii_isalpha(name[0]);
  for (char c : name) ok = ok && (absl::ascii_isalnum(c) || c == '_');
  if (!ok) {
    return absl::InvalidArgumentError(fmt::format(
        "SpannerChangeStreamSource: change stream name \"{}\" is not a plain identifier "
        "(letters, digits and '_', starting with a letter, at most 128 characters)",
        name.substr(0, 140)));
  }
  return absl::OkStatus();
}

}  // namespace gcpstream::spanner
