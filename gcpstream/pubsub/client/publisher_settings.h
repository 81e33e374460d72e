#ifndef GCPSTREAM_PUBSUB_CLIENT_PUBLISHER_SETTINGS_H_
#define GCPSTREAM_PUBSUB_CLIENT_PUBLISHER_SETTINGS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>

#include "absl/status/status.h"

namespace gcpstream::pubsub {

// When a publisher sends a batch: whichever threshold is reached first, or flush().
//
// Defaults are those of Google's C++ Pub/Sub client (google-cloud-cpp's publisher options:
// 100 messages, 1 MiB, 10 ms). The Java SDK, which the reference documents, uses 100 messages,
// 1000 bytes and 1 ms; with 1 KiB messages that would send every message on its own request, so
// set those explicitly for Java-identical batching.
struct BatchingSettings {
  std::int64_t element_count_threshold = 100;
  std::int64_t request_byte_threshold = 1024 * 1024;
  std::chrono::milliseconds delay_threshold{10};
  // INVALID_ARGUMENT naming the option: thresholds >= 1 (count at most 1000, Pub/Sub's
  // per-request limit; bytes at most 10 MB, the request size limit), delay >= 0.
  absl::Status validate() const;
};

// How a publish is retried — the eight knobs of Google's publisher RetrySettings. Defaults are the
// Java publisher's (Publisher.Builder's): total 600 s, first retry after 100 ms growing x4 to
// 60 s, attempts timing out after 5 s growing x4 to 600 s, attempts unbounded (0).
struct RetrySettings {
  std::chrono::milliseconds total_timeout{std::chrono::seconds(600)};
  std::chrono::milliseconds initial_retry_delay{100};
  double retry_delay_multiplier = 4.0;
  std::chrono::milliseconds max_retry_delay{std::chrono::seconds(60)};
  std::chrono::milliseconds initial_rpc_timeout{std::chrono::seconds(5)};
  double rpc_timeout_multiplier = 4.0;
  std::chrono::milliseconds max_rpc_timeout{std::chrono::seconds(600)};
  int max_attempts = 0;  // 0: bounded by total_timeout only
  // Google's publisher retries these codes (the Java SDK's publish retry codes).
  std::set<absl::StatusCode> retryable_codes = {
      absl::StatusCode::kAborted,           absl::StatusCode::kCancelled,
      absl::StatusCode::kDeadlineExceeded,  absl::StatusCode::kInternal,
      absl::StatusCode::kResourceExhausted, absl::StatusCode::kUnknown,
      absl::StatusCode::kUnavailable};
  // With message ordering the publisher retries without limit (Google's publishers override
  // total timeout and attempts for ordered publishing).
  bool unbounded = false;
  absl::Status validate() const;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_CLIENT_PUBLISHER_SETTINGS_H_
