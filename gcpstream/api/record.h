#ifndef GCPSTREAM_API_RECORD_H_
#define GCPSTREAM_API_RECORD_H_

#include <cstdint>
#include <limits>
#include <utility>

namespace gcpstream {

// Event time is milliseconds since the Unix epoch throughout gcpstream (Flink's convention).
// kNoTimestamp marks a record that carries no event timestamp.
inline constexpr std::int64_t kNoTimestamp = std::numeric_limits<std::int64_t>::min();

// The lowest and highest watermarks. A watermark of kMaxWatermark means "no more data"
// (end of input).
inline constexpr std::int64_t kMinWatermark = std::numeric_limits<std::int64_t>::min();
inline constexpr std::int64_t kMaxWatermark = std::numeric_limits<std::int64_t>::max();

// A value travelling through a job, with its optional event timestamp (ms since epoch).
template <typename T>
struct StreamRecord {
  T value;
  std::int64_t timestamp_ms = kNoTimestamp;

  bool has_timestamp() const { return timestamp_ms != kNoTimestamp; }
};

template <typename T>
StreamRecord<T> MakeRecord(T value, std::int64_t timestamp_ms = kNoTimestamp) {
  return StreamRecord<T>{std::move(value), timestamp_ms};
}

}  // namespace gcpstream

#endif  // GCPSTREAM_API_RECORD_H_
