#ifndef GCPSTREAM_RUNTIME_CHECKPOINT_CONFIG_H_
#define GCPSTREAM_RUNTIME_CHECKPOINT_CONFIG_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace gcpstream::runtime {

// Barrier handling: EXACTLY_ONCE aligns barriers at exchanges (a channel that delivered barrier
// n waits for barrier n on every other channel); AT_LEAST_ONCE lets records of the next
// checkpoint overtake, so a restore may replay some records twice.
enum class CheckpointingMode { kExactlyOnce, kAtLeastOnce };

struct CheckpointConfig {
  // Periodic checkpoints; zero disables periodic checkpointing.
  std::chrono::milliseconds interval{0};
  // A checkpoint not complete after this long is aborted (Flink: 10 min).
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  // Minimum time between the end of one checkpoint and the start of the next.
  std::chrono::milliseconds min_pause_between{0};
  // Failed checkpoints tolerated in a row before the job fails (Flink's default: 0).
  int tolerable_failed_checkpoints = 0;
  CheckpointingMode mode = CheckpointingMode::kExactlyOnce;
  // Where checkpoints are written: <directory>/<job-id>/chk-<n>/. Empty: checkpoints are not
  // persisted (only in memory), which is only useful for tests.
  std::string directory;
  // Completed checkpoints kept; older ones are deleted after a newer one completes.
  int retained = 1;
  // Take a final checkpoint when every source has finished, so committers commit
  // (Flink's checkpoints after finished tasks).
  bool final_checkpoint_on_end_of_input = true;
};

enum class RestartStrategyKind { kNone, kFixedDelay, kExponentialDelay };

struct RestartStrategy {
  RestartStrategyKind kind = RestartStrategyKind::kNone;
  // Fixed delay: attempts and delay between them.
  int max_attempts = 3;
  std::chrono::milliseconds delay{1000};
  // Exponential: initial delay doubling (x backoff_multiplier) to max_delay; the backoff
  // resets after `reset_after` of running without failure.
  std::chrono::milliseconds initial_delay{1000};
  std::chrono::milliseconds max_delay{std::chrono::minutes(5)};
  double backoff_multiplier = 2.0;
  std::chrono::milliseconds reset_after{std::chrono::hours(1)};
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_CHECKPOINT_CONFIG_H_
