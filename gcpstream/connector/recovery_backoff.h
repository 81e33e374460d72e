#ifndef GCPSTREAM_CONNECTOR_RECOVERY_BACKOFF_H_
#define GCPSTREAM_CONNECTOR_RECOVERY_BACKOFF_H_

#include <chrono>
#include <functional>
#include <optional>

#include "absl/status/status.h"

namespace gcpstream::connector {

// The sink-owned recovery budget (a repair re-applying parked records after creating a missing
// topic or table). Defaults are the spec's: 500 ms doubling to 10 s, 10 attempts, ±25 % jitter
// so subtasks resuming against the same fresh resource do not retry in lockstep.
struct RecoveryOptions {
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{10000};
  int max_attempts = 10;
  double jitter = 0.25;
  // INVALID_ARGUMENT naming the option: initial > 0, max >= initial, attempts >= 1,
  // 0 <= jitter < 1.
  absl::Status validate() const;
};

// Successive delays of one recovery. Deterministic given its random source (tests inject one).
class RecoveryBackoff {
 public:
  // `uniform01` returns values in [0, 1); by default a per-instance random engine.
  explicit RecoveryBackoff(RecoveryOptions options, std::function<double()> uniform01 = nullptr);

  // The delay before the next attempt, or nullopt once max_attempts attempts were handed out.
  std::optional<std::chrono::milliseconds> next();
  int attempts() const { return attempts_; }
  void reset() { attempts_ = 0; }

 private:
  RecoveryOptions options_;
  std::function<double()> uniform01_;
  int attempts_ = 0;
};

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_RECOVERY_BACKOFF_H_
