#ifndef GCPSTREAM_SPANNER_CLIENT_BATCH_WRITE_H_
#define GCPSTREAM_SPANNER_CLIENT_BATCH_WRITE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "gcpstream/connector/recovery_backoff.h"
#include "gcpstream/connector/request_batcher.h"
#include "gcpstream/spanner/client/session_pool.h"
#include "gcpstream/spanner/client/spanner_stub.h"
#include "gcpstream/util/scheduler.h"
#include "google/spanner/v1/spanner.pb.h"

namespace gcpstream::spanner {

// Mutations of one database written with BatchWrite, one mutation per mutation group: the
// group is what Spanner reports a status for, so every verdict is about one mutation.
using BatchWriteBatcher = connector::RequestBatcher<google::spanner::v1::Mutation,
                                                    google::spanner::v1::BatchWriteRequest>;

// How requests are cut and retried.
struct BatchWriteSettings {
  // A request is sent before a mutation would carry it past any limit (see
  // SpannerWriterOptions for what each defends).
  std::int64_t max_cells = 5000;
  std::int64_t max_mutations = 500;
  std::int64_t max_bytes = 1024 * 1024;
  // RequestOptions.priority; PRIORITY_UNSPECIFIED sends none.
  google::spanner::v1::RequestOptions::Priority priority =
      google::spanner::v1::RequestOptions::PRIORITY_UNSPECIFIED;
  // Retries of transient outcomes: jittered exponential delays; max_attempts counts the
  // delays (retries), so N attempts in all are N - 1 here.
  connector::RecoveryOptions retry{std::chrono::milliseconds(500), std::chrono::milliseconds(10000),
                                   9, 0.25};
  // Every attempt's deadline, session acquisition included.
  std::chrono::milliseconds attempt_timeout{30000};
  // A session the service no longer knows is replaced and the same request re-sent, at most
  // this many times per attempt; these re-sends spend no retry budget.
  int session_replacements = 3;
  // Tests pin the jitter; empty = random.
  std::function<double()> uniform01;
  // Called for each verdict about to be retried (cheap; under the batcher's lock).
  std::function<void(const absl::Status&)> on_retry;
};

// What a mutation adds to a BatchWriteRequest as its own mutation group: its serialized size
// plus the group's and the mutation's field framing.
std::int64_t GroupWireBytes(const google::spanner::v1::Mutation& mutation);
// Bytes of a request that are not its groups (session name, request options, framing), kept
// free under the service's request size limit.
inline constexpr std::int64_t kRequestOverheadBytes = 4096;

// The codes the sink retries on its own budget, per group or for the call: the service, not
// the mutation (Spanner connector spec, "Error handling").
bool IsRetriedCode(absl::StatusCode code);

// A failure of the whole BatchWrite call (it names no group, so its mutations have no outcome
// of their own) carries this mark; its code is kept. The sink fails the job with it whatever the
// code, where the same code reported for one group could be routed.
bool IsRequestLevelFailure(const absl::Status& status);

// The batcher of `database` (its resource name) over `stub`, taking sessions from `pool`.
// `cells(mutation)` is a mutation's cost in cells. Outcomes reach `listener`.
std::shared_ptr<BatchWriteBatcher> MakeBatchWriteBatcher(
    std::string database, std::shared_ptr<SpannerStub> stub, std::shared_ptr<SessionPool> pool,
    BatchWriteSettings settings,
    std::function<std::int64_t(const google::spanner::v1::Mutation&)> cells,
    std::shared_ptr<util::Scheduler> timers,
    std::shared_ptr<connector::SinkOutcomeListener<google::spanner::v1::Mutation>> listener);

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CLIENT_BATCH_WRITE_H_
