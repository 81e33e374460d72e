#include "gcpstream/connector/recovery_backoff.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace gcpstream::connector {

absl::Status RecoveryOptions::validate() const {
  if (initial_backoff.count() <= 0) {
    return absl::InvalidArgumentError("recovery_initial_backoff must be positive");
  }
  if (max_backoff < initial_backoff) {
    return absl::InvalidArgumentError(
        "recovery_max_backoff must be at least recovery_initial_backoff");
  }
  if (max_attempts < 1) return absl::InvalidArgumentError("recovery_max_attempts must be >= 1");
  if (jitter < 0 || jitter >= 1) {
    return absl::InvalidArgumentError("recovery jitter must be in [0, 1)");
  }
  return absl::OkStatus();
}

RecoveryBackoff::RecoveryBackoff(RecoveryOptions options, std::function<double()> uniform01)
    : options_(options), uniform01_(std::move(uniform01)) {
  if (!uniform01_) {
    auto engine = std::make_shared<std::mt19937_64>(std::random_device{}());
    uniform01_ = [engine] { return std::uniform_real_distribution<double>(0, 1)(*engine); };
  }
}

std::optional<std::chrono::milliseconds> RecoveryBackoff::next() {
  if (attempts_ >= options_.max_attempts) return std::nullopt;
  const double base = std::min(
      static_cast<double>(options_.max_backoff.count()),
      static_cast<double>(options_.initial_backoff.count()) * std::pow(2.0, attempts_));
  ++attempts_;
  const double factor = 1.0 + options_.jitter * (2.0 * uniform01_() - 1.0);
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(base * factor)));
}

}  // namespace gcpstream::connector
