#include "gcpstream/pubsub/source/undecodable_message_log.h"

#include <spdlog/spdlog.h>

#include <string>

#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::pubsub {

bool UndecodableMessageLog::log(std::string_view message_id, std::string_view subscription,
                                const absl::Status& cause, std::string_view outcome) {
  const auto now = now_();
  if (last_ != std::chrono::steady_clock::time_point::min() && now - last_ < interval_) {
    ++unreported_;
    return false;
  }
  // The cause is the deserializer's message; it never carries the payload itself beyond what
  // the deserializer chose to quote, and is cut to keep a line a line.
  std::string reason(cause.message().substr(0, 300));
  if (unreported_ > 0) {
    spdlog::warn(
        "Pub/Sub source: message {} from {} could not be deserialized and was {} ({}: {}); "
        "{} more since the last such line",
        message_id, subscription, outcome, absl::StatusCodeToString(cause.code()), reason,
        unreported_);
  } else {
    spdlog::warn("Pub/Sub source: message {} from {} could not be deserialized and was {} ({}: {})",
                 message_id, subscription, outcome, absl::StatusCodeToString(cause.code()), reason);
  }
  last_ = now;
  unreported_ = 0;
  return true;
}

}  // namespace gcpstream::pubsub
