#ifndef GCPSTREAM_BIGTABLE_CLIENT_MUTATION_BATCHER_H_
#define GCPSTREAM_BIGTABLE_CLIENT_MUTATION_BATCHER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/sink_outcome.h"
#include "google/bigtable/v2/bigtable.pb.h"

namespace gcpstream::bigtable {

using Entry = google::bigtable::v2::MutateRowsRequest::Entry;

// How one entry ended: the caller's token, its status, and — when it failed — the entry itself
// (`element`), handed back so the caller can re-submit or route it.
using MutationOutcome = connector::SinkOutcome<Entry>;

// Receives outcomes, a request's worth at a time, on arbitrary threads, never while the batcher
// holds its lock; must be thread-safe and cheap. `spent` owns the finished request's memory,
// to be dropped on the thread that built the entries (see connector/sink_outcome.h: freeing a
// request's thousands of small blocks on a gRPC thread made allocation on the writer's thread
// the sink's largest CPU cost in bench/bigtable_write).
using MutationListener = connector::SinkOutcomeListener<Entry>;

// When a batcher sends a request: whichever comes first of the element count, the byte size,
// the delay, or the next entry carrying the request past Bigtable's 100,000-mutation limit.
// Defaults are the Bigtable client's (100 entries, 20 MiB, 1 s); the ceilings (19,999 entries,
// 100 MiB - 1) are those its settings builder enforces against its own flow-control budget.
struct BatchingThresholds {
  std::int64_t element_count = 100;
  std::int64_t byte_size = 20LL * 1024 * 1024;
  std::chrono::milliseconds delay{1000};
  static constexpr std::int64_t kMaxElementCount = 19'999;
  static constexpr std::int64_t kMaxByteSize = 100LL * 1024 * 1024 - 1;
  absl::Status validate() const;
};

// Per-entry retries of MutateRows, owned by the client (the sink never retries these): the
// Bigtable clients' defaults — transient codes retried with exponential backoff (10 ms doubling
// to 1 min), each attempt bounded by 60 s, everything by 10 min.
struct MutateRowsRetrySettings {
  std::set<absl::StatusCode> retryable_codes = {absl::StatusCode::kUnavailable,
                                                absl::StatusCode::kDeadlineExceeded,
                                                absl::StatusCode::kAborted};
  std::chrono::milliseconds initial_delay{10};
  double multiplier = 2.0;
  std::chrono::milliseconds max_delay{std::chrono::minutes(1)};
  std::chrono::milliseconds attempt_timeout{std::chrono::minutes(1)};
  std::chrono::milliseconds total_timeout{std::chrono::minutes(10)};
};

// Accumulates entries for one table into MutateRows requests. The sink writer talks to this
// interface (its tests use a fake that completes nothing on its own); BulkMutationBatcher is the
// real one. There is no flow controller: whoever adds bounds its own in-flight work.
class MutationBatcher {
 public:
  virtual ~MutationBatcher() = default;
  virtual void add(Entry&& entry, std::uint64_t token) = 0;
  // The entry travels alone in its own request, so the service's answer concerns it only.
  virtual void add_solo(Entry&& entry, std::uint64_t token) = 0;
  // Sends what is accumulated now.
  virtual void flush() = 0;
  // Fails what is accumulated or waiting for a retry with CANCELLED, cancels requests in flight,
  // and returns once every outcome was delivered. Blocking.
  virtual absl::Status shutdown() = 0;
};

// One batcher per table, over the client of the table's instance.
class MutationBatcherFactory {
 public:
  virtual ~MutationBatcherFactory() = default;
  virtual absl::StatusOr<std::shared_ptr<MutationBatcher>> create(
      const connector::TableDestination& table, std::shared_ptr<MutationListener> listener) = 0;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CLIENT_MUTATION_BATCHER_H_
