#ifndef GCPSTREAM_PUBSUB_SINK_PUBSUB_PUBLISHER_OPTIONS_H_
#define GCPSTREAM_PUBSUB_SINK_PUBSUB_PUBLISHER_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "gcpstream/connector/recovery_backoff.h"
#include "gcpstream/pubsub/client/batching_publisher.h"

namespace gcpstream::pubsub {

// Publisher and writer tuning of PubSubSink (the spec's PubSubPublisherOptions). Batching and
// retry settings go to the publishers; everything else is the writer's own. Defaults in
// brackets.
struct PubSubPublisherOptions {
  // --- batching (see BatchingSettings for the source of the defaults) ---
  std::int64_t batch_element_count_threshold = BatchingSettings{}.element_count_threshold;  // 100
  std::int64_t batch_request_byte_threshold = BatchingSettings{}.request_byte_threshold;    // 1 MiB
  std::chrono::milliseconds batch_delay_threshold = BatchingSettings{}.delay_threshold;     // 10 ms

  // --- publish retries (Google's publisher RetrySettings; see RetrySettings) ---
  // Rejected beside enable_message_ordering: an ordered publisher retries without limit.
  std::optional<std::chrono::milliseconds> retry_total_timeout;  // [600 s]
  std::optional<int> retry_max_attempts;                         // [0: unbounded]
  std::chrono::milliseconds retry_initial_delay = RetrySettings{}.initial_retry_delay;  // 100 ms
  double retry_delay_multiplier = RetrySettings{}.retry_delay_multiplier;               // x4
  std::chrono::milliseconds retry_max_delay = RetrySettings{}.max_retry_delay;          // 60 s
  std::chrono::milliseconds retry_initial_rpc_timeout = RetrySettings{}.initial_rpc_timeout;  // 5 s
  double retry_rpc_timeout_multiplier = RetrySettings{}.rpc_timeout_multiplier;               // x4
  std::chrono::milliseconds retry_max_rpc_timeout = RetrySettings{}.max_rpc_timeout;  // 600 s

  // --- the writer's own ---
  // Honour ordering keys (per key, in publish order, per writer subtask). [false]
  bool enable_message_ordering = false;
  // Unacknowledged publishes per writer subtask: count [1000] and serialized bytes [64 MiB].
  // A write at either cap yields to the mailbox until completions bring it down.
  std::int64_t max_in_flight_messages = 1000;
  std::int64_t max_in_flight_bytes = 64LL * 1024 * 1024;
  // Publishers a writer keeps [100]; the least recently used clean one is released at the cap.
  int max_active_publishers = 100;
  // A publisher unused for longer is released after a successful checkpoint flush [1 h].
  std::chrono::milliseconds destination_idle_timeout{std::chrono::hours(1)};
  // Bound on releasing publishers, all asked at once and awaited under one deadline [30 s].
  std::chrono::milliseconds shutdown_timeout{std::chrono::seconds(30)};
  // Fails the job after this long with no publish completing [600 s]; restarts at every
  // completion. A WARN comes every tenth of it while stalled.
  std::chrono::milliseconds publish_progress_timeout{std::chrono::seconds(600)};
  // Topic-creation / ordering-key repair budget [500 ms -> 10 s, 10 attempts, ±25 %].
  connector::RecoveryOptions recovery;
  // Confirmed rejections in a row before the job fails [100]; -1 disables.
  int max_consecutive_rejections = 100;
  // Per-topic recordsSend / sendErrors counters [off].
  bool per_destination_metrics = false;

  // INVALID_ARGUMENT naming the option(s) of the first invalid value or combination.
  absl::Status validate() const;
  // What the publishers get.
  PublisherSettings publisher_settings() const;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SINK_PUBSUB_PUBLISHER_OPTIONS_H_
