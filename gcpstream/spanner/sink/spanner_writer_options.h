#ifndef GCPSTREAM_SPANNER_SINK_SPANNER_WRITER_OPTIONS_H_
#define GCPSTREAM_SPANNER_SINK_SPANNER_WRITER_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace gcpstream::spanner {

// Request priority (google.spanner.v1.RequestOptions.Priority). Spanner treats an unset
// priority as HIGH, so MEDIUM is a step down from the default.
enum class RpcPriority { kLow, kMedium, kHigh };

// What happens to a mutation refused for violating a constraint (FAILED_PRECONDITION: NOT NULL,
// foreign key, a value too long for its column; OUT_OF_RANGE: a CHECK constraint). FAIL_JOB by
// default: such refusals usually mean the record-to-column mapping is wrong, and
// FAILED_PRECONDITION is also how Spanner refuses every write while a database's CMEK key is
// unavailable, which a dropping handler would turn into a silent loss.
enum class ConstraintViolationPolicy { kFailJob, kRouteToFailureHandler };

// The Spanner writer's options; every one has a default ([in brackets]). docs/spanner.md,
// "The sink", says what each is for.
struct SpannerWriterOptions {
  // Batch limits. A request is sent before adding a mutation would carry it past any of them
  // (they are ANDed: whichever binds first). A mutation alone over a limit travels alone.
  //  - cells [5000, at most 80000]: one per written column plus one per secondary index
  //    containing it; a delete costs 1 + the table's index count per key or range. 80000 is
  //    Spanner's "mutations per mutation group" quota, the only mutation figure documented
  //    for BatchWrite.
  //  - mutations [500, at most 80000]: every mutation costs at least one cell.
  //  - bytes [1 MiB, at most 104857600]: the serialized mutations (exact here, not an
  //    estimate); 100 MiB is the request size the service was measured to refuse.
  std::int64_t max_batch_cells = 5000;
  std::int64_t max_batch_mutations = 500;
  std::int64_t max_batch_bytes = 1024 * 1024;
  static constexpr std::int64_t kMaxBatchCells = 80000;
  static constexpr std::int64_t kMaxBatchBytes = 104857600;

  // [unset] Accepted between 0 and 500 ms (what Spanner accepts for a commit). BatchWrite's
  // request (google.spanner.v1.BatchWriteRequest) has no commit-delay field, so it is not sent
  // with BatchWrite; building a sink with it set logs a warning saying so.
  std::optional<std::chrono::nanoseconds> max_commit_delay;
  // [unset: the service's default, HIGH]
  std::optional<RpcPriority> rpc_priority;

  // The sink's own retries of transient outcomes (ABORTED, UNAVAILABLE, DEADLINE_EXCEEDED,
  // RESOURCE_EXHAUSTED, per group or for the whole call): only undecided groups are re-sent.
  // First backoff [500 ms, at least 1 ms], doubling up to [10 s], ±25 % jitter, [10] attempts
  // in all, the first included. Exhausting them fails the job.
  std::chrono::milliseconds retry_initial_backoff{500};
  std::chrono::milliseconds retry_max_backoff{10000};
  int retry_max_attempts = 10;
  // Bounds one BatchWrite attempt, a stream that stalls after some responses included [30 s].
  // A deadline is transient: the undecided groups are retried.
  std::chrono::milliseconds batch_write_timeout{30000};

  // Mutations (and their bytes) accepted but not yet confirmed per writer subtask
  // [5000, 64 MiB]; at either cap write() yields to the mailbox. Requests are sent as they
  // fill, any number at once within these caps and max_sessions.
  std::int64_t max_in_flight_mutations = 5000;
  std::int64_t max_in_flight_bytes = 64LL * 1024 * 1024;
  // Sessions (so BatchWrite calls in flight) per writer subtask [16].
  int max_sessions = 16;
  // Routed refusals in a row (no applied group between them) before the job fails [-1: no
  // bound]. Off by default: the Spanner connector's specification has no such bound, and after
  // a restore a replayed `insert` is refused ALREADY_EXISTS once per replayed row, which a
  // dropping handler is meant to absorb however many there are. Set it (e.g. 100) so that a
  // mapping every record of which Spanner refuses fails the job instead of being dropped whole.
  int max_consecutive_rejections = -1;
  // A WARN names the wait while nothing completes for this long [60 s].
  std::chrono::milliseconds stall_warning_interval{std::chrono::seconds(60)};
  // Bound on the writer's close [30 s].
  std::chrono::milliseconds shutdown_timeout{std::chrono::seconds(30)};

  // INVALID_ARGUMENT naming the option of the first invalid value and its allowed range.
  absl::Status validate() const;
  // Configurations that work but do not do what they seem to: max_batch_mutations above
  // max_batch_cells can never bind; max_commit_delay is not sent with BatchWrite.
  std::vector<std::string> warnings() const;
  // The most time the BatchWrite calls of one batch can take: A attempts of T each plus the
  // A-1 jittered backoffs, A×T + (1 + 0.25) × Σ(i=1..A-1) min(Bmax, B0 × 2^(i-1)); 369.375 s
  // by default. Getting a session (creating one, waiting for a free one) is not included.
  std::chrono::milliseconds worst_case_write_time() const;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_SINK_SPANNER_WRITER_OPTIONS_H_
