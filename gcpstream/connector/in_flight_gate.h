#ifndef GCPSTREAM_CONNECTOR_IN_FLIGHT_GATE_H_
#define GCPSTREAM_CONNECTOR_IN_FLIGHT_GATE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "gcpstream/api/mailbox.h"

namespace gcpstream::connector {

// How long a writer may wait for completions, and what it says meanwhile.
struct ProgressPolicy {
  // Names the connector in messages, e.g. "Pub/Sub".
  std::string connector;
  // What completes, e.g. "publish", "mutation".
  std::string completion = "request";
  // A WARN after this long with nothing completing, then at most once per interval.
  std::chrono::milliseconds stall_warning_interval{std::chrono::minutes(1)};
  // Fail after this long with nothing completing (the budget restarts at every completion).
  // Unset: wait as long as it takes (the client's own timeout ends it).
  std::optional<std::chrono::milliseconds> progress_timeout;
  // The option that sets progress_timeout, named in the failure.
  std::string progress_timeout_option = "progress_timeout";
};

// Bounds a writer's unacknowledged work by count and bytes, and makes it wait for completions
// by yielding to its mailbox (so completions, which arrive as mails, keep running).
//
// Admission is "below the cap": a writer is admitted while count < max_count and
// bytes < max_bytes, so an element larger than the byte cap is admitted on an empty writer
// (waiting for it to fit would wait for a completion that cannot come). Every wait warns while
// stalled and fails after the progress timeout (see ProgressPolicy).
//
// All methods but count()/bytes() run on the writer's thread; those two are atomic reads for
// gauges.
class InFlightGate {
 public:
  InFlightGate(std::int64_t max_count, std::int64_t max_bytes, ProgressPolicy policy,
               MailboxExecutor& mailbox);

  // Waits until below both caps. `before_wait` runs once, before the first wait (e.g. send what
  // a batcher holds, so the wait does not depend on a batching delay).
  absl::Status admit(std::string_view wait, absl::FunctionRef<void()> before_wait);
  void acquire(std::int64_t bytes);
  // A completion: releases what it held and counts as progress.
  void release(std::int64_t bytes);
  // Progress that releases nothing (e.g. a failure answered without holding capacity).
  void record_progress();
  // Waits until nothing is in flight.
  absl::Status drain(std::string_view wait);
  // Waits until `done`, with the stall warning and progress timeout.
  absl::Status await(std::string_view wait, absl::FunctionRef<bool()> done);

  // Extra words for the stall warning, e.g. "3 live tables".
  void set_stall_detail(std::function<std::string()> detail) { detail_ = std::move(detail); }

  std::int64_t count() const { return count_.load(std::memory_order_relaxed); }
  std::int64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  std::int64_t max_count() const { return max_count_; }
  std::int64_t max_bytes() const { return max_bytes_; }
  // How many stall warnings were logged (for tests).
  int warnings() const { return warnings_; }

 private:
  // "<connector> sink: no <completion> has completed for X s while <wait>; N in flight, ..."
  std::string describe(std::string_view wait, SteadyTime::duration stalled) const;

  std::int64_t max_count_;
  std::int64_t max_bytes_;
  ProgressPolicy policy_;
  MailboxExecutor& mailbox_;
  std::atomic<std::int64_t> count_{0};
  std::atomic<std::int64_t> bytes_{0};
  std::uint64_t progress_ = 0;  // completions so far
  SteadyTime last_warning_ = SteadyTime::min();
  std::function<std::string()> detail_;
  int warnings_ = 0;
};

// Waits `delay` by yielding to the mailbox (mails keep running). Returns CANCELLED when the
// subtask is cancelled, or the error of a mail that ran.
absl::Status SleepYielding(MailboxExecutor& mailbox, std::chrono::milliseconds delay);

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_IN_FLIGHT_GATE_H_
