#include "gcpstream/connector/in_flight_gate.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "gcpstream/util/absl_fmt.h"
#include "gcpstream/util/wait_notice.h"

namespace gcpstream::connector {

using Clock = std::chrono::steady_clock;

InFlightGate::InFlightGate(std::int64_t max_count, std::int64_t max_bytes, ProgressPolicy policy,
                           MailboxExecutor& mailbox)
    : max_count_(max_count), max_bytes_(max_bytes), policy_(std::move(policy)), mailbox_(mailbox) {}

void InFlightGate::acquire(std::int64_t bytes) {
  count_.fetch_add(1, std::memory_order_relaxed);
  bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

void InFlightGate::release(std::int64_t bytes) {
  count_.fetch_sub(1, std::memory_order_relaxed);
  bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  record_progress();
}

void InFlightGate::record_progress() { ++progress_; }

absl::Status InFlightGate::admit(std::string_view wait, absl::FunctionRef<void()> before_wait) {
  auto below = [&] { return count() < max_count_ && bytes() < max_bytes_; };
  if (below()) return absl::OkStatus();
  before_wait();
  return await(wait, below);
}

absl::Status InFlightGate::drain(std::string_view wait) {
  return await(wait, [&] { return count() == 0; });
}

absl::Status InFlightGate::await(std::string_view wait, absl::FunctionRef<bool()> done) {
  // The budget is measured from the start of the wait and restarts whenever a completion is
  // noticed (completions bump a counter; reading the clock per completion would cost more than
  // the bookkeeping it serves). The wait wakes every tenth of the shorter of the two periods
  // (at most every second) to look, so a completion is dated at most that late: the warning
  // and the expiry come at most 10% after "that long since the last completion", and the time
  // they report is never more than the real one. Each look also refreshes the wait's
  // description for other threads (a checkpoint that times out names it).
  SteadyTime base = Clock::now();
  std::uint64_t seen = progress_;
  util::ScopedWaitNotice notice;  // cleared (or the outer wait's put back) however this ends
  std::chrono::milliseconds period = policy_.stall_warning_interval;
  if (policy_.progress_timeout) period = std::min(period, *policy_.progress_timeout);
  const auto check = std::clamp<std::chrono::milliseconds>(
      period / 10, std::chrono::milliseconds(1), std::chrono::seconds(1));
  while (!done()) {
    SteadyTime wake = base + policy_.stall_warning_interval;
    if (last_warning_ != SteadyTime::min()) {
      wake = std::max(wake, last_warning_ + policy_.stall_warning_interval);
    }
    if (policy_.progress_timeout) wake = std::min(wake, base + *policy_.progress_timeout);
    // Look for completions at least every `check`.
    wake = std::min(wake, Clock::now() + check);
    absl::Status s = mailbox_.yield_until(done, wake);
    if (s.ok() || s.code() != absl::StatusCode::kDeadlineExceeded) return s;
    const SteadyTime now = Clock::now();
    const bool progressed = progress_ != seen;
    if (progressed) {
      seen = progress_;
      base = now;
    }
    // A wait this long is worth describing to other threads (a checkpoint that times out
    // names it); refreshed at every look, so it stays current.
    notice.update(describe(wait, now - base));
    if (progressed) continue;
    if (policy_.progress_timeout && now - base >= *policy_.progress_timeout) {
      return absl::DeadlineExceededError(fmt::format(
          "{} sink: no {} completed for {} ms while {} ({} in flight); failing the job after "
          "{} ({} ms)",
          policy_.connector, policy_.completion,
          std::chrono::duration_cast<std::chrono::milliseconds>(now - base).count(), wait, count(),
          policy_.progress_timeout_option, policy_.progress_timeout->count()));
    }
    if (now - base >= policy_.stall_warning_interval &&
        (last_warning_ == SteadyTime::min() ||
         now - last_warning_ >= policy_.stall_warning_interval)) {
      last_warning_ = now;
      ++warnings_;
      spdlog::warn("{}", describe(wait, now - base));
    }
  }
  return absl::OkStatus();
}

std::string InFlightGate::describe(std::string_view wait, SteadyTime::duration stalled) const {
  return fmt::format("{} sink: no {} has completed for {:.1f} s while {}; {} in flight{}",
                     policy_.connector, policy_.completion,
                     std::chrono::duration<double>(stalled).count(), wait, count(),
                     detail_ ? ", " + detail_() : std::string());
}

absl::Status SleepYielding(MailboxExecutor& mailbox, std::chrono::milliseconds delay) {
  const SteadyTime until = Clock::now() + delay;
  absl::Status s = mailbox.yield_until([&] { return Clock::now() >= until; }, until);
  if (s.code() == absl::StatusCode::kDeadlineExceeded) return absl::OkStatus();
  return s;
}

}  // namespace gcpstream::connector
