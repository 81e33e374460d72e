#ifndef GCPSTREAM_PUBSUB_SOURCE_UNDECODABLE_MESSAGE_LOG_H_
#define GCPSTREAM_PUBSUB_SOURCE_UNDECODABLE_MESSAGE_LOG_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>

#include "absl/status/status.h"

namespace gcpstream::pubsub {

// Logs messages the deserializer rejected under DROP or NACK, at WARN and rate-limited: the first
// one at once, then at most one line per interval [10 s] that says how many more there were. A
// poison stream of messages then costs a line every few seconds, not one per message, and a
// single bad message is never silent. Every rejected message is also counted in
// numRecordsInErrors by the reader. Subtask thread only.
class UndecodableMessageLog {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  explicit UndecodableMessageLog(
      std::chrono::milliseconds interval = std::chrono::seconds(10),
      Clock now = [] { return std::chrono::steady_clock::now(); })
      : interval_(interval), now_(std::move(now)) {}

  // Returns whether a line was written.
  bool log(std::string_view message_id, std::string_view subscription, const absl::Status& cause,
           std::string_view outcome);
  // Rejected messages not yet reported in a line.
  std::int64_t unreported() const { return unreported_; }

 private:
  std::chrono::milliseconds interval_;
  Clock now_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::time_point::min();
  std::int64_t unreported_ = 0;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SOURCE_UNDECODABLE_MESSAGE_LOG_H_
