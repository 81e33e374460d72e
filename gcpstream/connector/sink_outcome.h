#ifndef GCPSTREAM_CONNECTOR_SINK_OUTCOME_H_
#define GCPSTREAM_CONNECTOR_SINK_OUTCOME_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"

namespace gcpstream::connector {

// How one element handed to a DestinationClient ended: the writer's token, the status, and —
// when it failed — the element itself, handed back so the writer can re-submit or route it
// without having kept a copy.
template <typename E>
struct SinkOutcome {
  std::uint64_t token = 0;
  absl::Status status;
  std::optional<E> element;  // set when the element failed
};

// Receives outcomes, a request's worth at a time, on arbitrary threads (gRPC's, a timer's, or
// the caller's when a submission fails at once), never while the client holds a lock of its
// own. Implementations must be thread-safe and cheap: AsyncSinkWriter's queues them and wakes
// the writer's thread with one mail.
//
// `spent` owns memory of the finished request (null when there is none). The writer drops it
// on its own thread: memory freed on the thread that allocated it stays in that thread's
// malloc cache; freeing a request's many small blocks on a gRPC thread was the sinks' largest
// CPU cost in bench/ (docs/performance.md).
template <typename E>
class SinkOutcomeListener {
 public:
  virtual ~SinkOutcomeListener() = default;
  virtual void on_outcomes(std::vector<SinkOutcome<E>> outcomes, std::shared_ptr<void> spent) = 0;
};

// The per-destination client half that AsyncSinkWriter drives: a batcher, a publisher, a
// stream. It owns batching, the service client's own retries and the RPCs; it reports every
// element it accepted exactly once to the listener it was opened with. Every method but
// shutdown() is called on the writer's thread and must not block.
template <typename E>
class DestinationClient {
 public:
  virtual ~DestinationClient() = default;
  // Accepts an element into a batch; its outcome comes back with `token`.
  virtual void submit(E&& element, std::uint64_t token) = 0;
  // The same, but the element travels alone in its own request, so the service's answer
  // concerns it only (the isolation pass).
  virtual void submit_solo(E&& element, std::uint64_t token) = 0;
  // Sends everything batched now, whatever the thresholds.
  virtual void flush() = 0;
  // Fails what is batched or waiting for a retry with CANCELLED, cancels requests in flight,
  // and returns once every outcome was delivered. Blocking: the writer runs it through
  // BoundedShutdown on a thread of its own.
  virtual absl::Status shutdown() = 0;

  // Ordering hooks, for services that keep per-key order (Pub/Sub ordering keys); the
  // defaults do nothing. An element was parked after failing (its key must stay paused).
  virtual void on_parked(const E& /*element*/) {}
  // A repair is about to re-submit what was parked: resume every paused key.
  virtual void resume_parked() {}
  // A parked element went to the failure handler: resume its key.
  virtual void on_routed(const E& /*element*/) {}
};

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_SINK_OUTCOME_H_
