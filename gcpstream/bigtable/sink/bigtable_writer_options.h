#ifndef GCPSTREAM_BIGTABLE_SINK_BIGTABLE_WRITER_OPTIONS_H_
#define GCPSTREAM_BIGTABLE_SINK_BIGTABLE_WRITER_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "gcpstream/bigtable/client/mutation_batcher.h"
#include "gcpstream/connector/recovery_backoff.h"

namespace gcpstream::bigtable {

// Writer tuning of BigtableSink (the spec's BigtableWriterOptions). Every count counts entries
// (one per record), not mutations. Defaults in brackets.
struct BigtableWriterOptions {
  // Batch thresholds handed to the client; unset keeps the client's [100 entries, 20 MiB, and a
  // 1 s timer]. Ceilings 19,999 and 100 MiB - 1 (the client refuses thresholds at or above its
  // flow-control budget of 20,000 entries / 100 MiB).
  std::optional<std::int64_t> batch_element_count;
  std::optional<std::int64_t> batch_byte_size;
  // Unacknowledged entries per writer subtask [1000] and their serialized size [64 MiB]; at
  // either cap write() yields to the mailbox. Values above 20,000 / 100 MiB are allowed but
  // warned about: they describe a working job whose bound moves into the client.
  std::int64_t max_in_flight_entries = 1000;
  std::int64_t max_in_flight_bytes = 64LL * 1024 * 1024;
  // Confirmed rejections in a row before the job fails [100]; -1 disables.
  int max_consecutive_rejections = 100;
  // The auto-creation repair's budget [500 ms doubling to 10 s, 10 attempts, ±25 %].
  connector::RecoveryOptions recovery;
  // A table unused this long has its batcher dropped after a checkpoint flush [1 h].
  std::chrono::milliseconds destination_idle_timeout{std::chrono::hours(1)};
  // Instance clients (project, instance) one writer keeps open [16].
  int max_active_instances = 16;
  // Per-table destination.<TABLE>.recordsSend / sendErrors counters [off].
  bool per_destination_metrics = false;
  // A WARN when a wait sees no mutation answered for this long, at most once per interval
  // [1 min]. There is no sink-side timeout: the client gives up on a stalled MutateRows after
  // its own 10 minutes.
  std::chrono::milliseconds stall_warning_interval{std::chrono::minutes(1)};

  // INVALID_ARGUMENT naming the option.
  absl::Status validate() const;
  // WARN-worthy settings (in-flight bounds above the client's budget), as sentences.
  std::vector<std::string> warnings() const;
  BatchingThresholds thresholds() const;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_SINK_BIGTABLE_WRITER_OPTIONS_H_
