#ifndef GCPSTREAM_CONNECTOR_ASYNC_SINK_ADAPTER_H_
#define GCPSTREAM_CONNECTOR_ASYNC_SINK_ADAPTER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/connector/failed_element.h"
#include "gcpstream/connector/in_flight_gate.h"
#include "gcpstream/connector/recovery_backoff.h"
#include "gcpstream/connector/sink_outcome.h"
#include "gcpstream/connector/status_classifier.h"

namespace gcpstream::connector {

// The words a sink uses in its messages and metric names, so that an operator reading a log
// line or a dashboard sees the service's own terms.
struct SinkVocabulary {
  std::string connector;          // in messages: "Pub/Sub", "Bigtable"
  std::string metric_connector;   // the failure router's name: "pubsub", "bigtable"
  std::string element;            // singular: "message", "entry"
  std::string elements;           // plural: "messages", "entries"
  std::string element_metric;     // in gauge names: inFlight<X>, parked<X> ("Messages")
  std::string destination;        // what a destination is: "topic", "table"
  std::string client;             // the per-destination client: "publisher", "batcher"
  std::string live_destinations;  // in the stall warning: "3 <topics>", "1 <live tables>"
  std::string request;            // the call that sends them: "Publish", "MutateRows"
};

// Everything AsyncSinkWriter needs beyond the adapter: caps, budgets, and names. Defaults are
// the spec's writer defaults shared by every sink; each sink maps its own option names onto it.
struct AsyncSinkWriterSettings {
  SinkVocabulary words;
  // Unacknowledged elements per writer subtask, by count and serialized bytes; at either cap
  // write() yields to the mailbox (see InFlightGate for the "below the cap" admission rule).
  std::int64_t max_in_flight_count = 1000;
  std::int64_t max_in_flight_bytes = 64LL * 1024 * 1024;
  // Stall warning interval and the optional progress timeout of every wait.
  ProgressPolicy progress;
  // The repair's jittered budget (create a missing destination, then re-submit).
  RecoveryOptions recovery;
  // Confirmed rejections in a row before the job fails; -1 disables.
  int max_consecutive_rejections = 100;
  // Live client groups (a group = the clients sharing one channel, see group_of); at the cap
  // the least recently used clean group is released, after draining everything if none is
  // clean. Work is never dropped to make room.
  int max_active_groups = 100;
  // A destination unused for longer is released after a successful checkpoint flush.
  std::chrono::milliseconds destination_idle_timeout{std::chrono::hours(1)};
  // Bound on releasing clients (all asked at once, one deadline for all).
  std::chrono::milliseconds shutdown_timeout{std::chrono::seconds(30)};
  // destination.<scope>.recordsSend / sendErrors counters.
  bool per_destination_metrics = false;
  // The process-wide counter (and gauge) of abandoned client shutdowns.
  std::string abandoned_counter = "sinkShutdownsAbandoned";
  // The gauge of live client groups; empty registers none.
  std::string active_groups_gauge;
  // Elements a client holds while waiting out a retry backoff of its own (a sink whose client
  // owns the retries, like Cloud Tasks): added to the parked<X> gauge. Called on the metrics
  // reader's thread, so it must be thread-safe. Empty adds nothing.
  std::function<std::int64_t()> client_parked;
  // Every request carries one element (Cloud Tasks: one CreateTask per task), so a record-level
  // refusal already concerns that element alone: it is routed without the isolation pass's
  // resend. Default false: batch requests are confirmed element by element.
  bool one_element_per_request = false;
  // Every this long the clients send what they have batched, whatever the thresholds (a
  // processing-time timer on the writer's thread): bounds how long a row waits in a batch when
  // checkpoints are rare or off. It sends; it does not wait for answers. 0: off.
  std::chrono::milliseconds flush_interval{0};
};

// What a destination repair did.
struct RepairResult {
  absl::Status status;     // OK: the destination now exists; re-submit
  bool permanent = false;  // a failure no retry can mend (fail now, spend no budget)
  bool created = false;    // this repair created the destination (named in a final failure)
};

// What a service contributes to AsyncSinkWriter: how to reach a destination, how big an
// element is, what a status means, how to repair a destination and how a failed element looks
// to a failure handler. Everything is called on the writer's thread. Methods that talk to the
// service (check, repair) may wait by yielding to the writer's mailbox (AwaitOnMailbox), never
// by blocking it.
template <typename D, typename E>
class AsyncSinkAdapter {
 public:
  virtual ~AsyncSinkAdapter() = default;

  // The resource name of a destination, for messages ("projects/p/topics/t").
  virtual std::string describe(const D& destination) const = 0;
  // The name of its per-destination metric group (the topic id, the table id).
  virtual std::string metric_scope(const D& destination) const = 0;
  // Destinations sharing a channel form a group (Bigtable: one (project, instance)); the
  // writer bounds live groups and releases a group's channel after its last destination.
  // Default: every destination is its own group.
  virtual std::string group_of(const D& destination) const { return describe(destination); }
  // Opens the client of a destination, reporting to `listener`.
  virtual absl::StatusOr<std::shared_ptr<DestinationClient<E>>> open(
      const D& destination, std::shared_ptr<SinkOutcomeListener<E>> listener) = 0;
  // Runs once when a destination is opened, before its first element (e.g. compare declared
  // column family types). An error fails the job.
  virtual absl::Status check(const D& /*destination*/) { return absl::OkStatus(); }
  // False while releasing the destination's client would lose what the next checkpoint needs
  // (a two-phase writer's position not yet named by a committable): the writer then keeps it
  // through idleness and capacity eviction. Asked on the writer's thread. Default: true.
  virtual bool releasable(const D& /*destination*/) const { return true; }
  // Releases a group's shared resources after all its destinations were shut down.
  virtual absl::Status release_group(const std::string& /*group*/) { return absl::OkStatus(); }

  // The element's serialized size, counted against max_in_flight_bytes.
  virtual std::int64_t size_of(const E& element) const = 0;
  // Checks an element before it is sent: a record-level status (by the classifier) is routed
  // to the failure handler as a failure of the record, without any RPC; any other error fails
  // the job. Use it for what the service documents as invalid (limits, required fields).
  virtual absl::Status precheck(const D& /*destination*/, const E& /*element*/) {
    return absl::OkStatus();
  }

  // What a failure means (connector::Classify with the sink's rules).
  virtual FailureClass classify(const absl::Status& status) const = 0;
  // A failure caused by an earlier failure of the same ordering unit (never a root cause,
  // never counted): parked and re-submitted after the repair. Default: none.
  virtual bool is_cascade(const absl::Status& /*status*/) const { return false; }
  // The errorClass a kRepairable failure is counted under. Default NOT_FOUND: a missing
  // destination, whatever code the service masked it behind.
  virtual absl::StatusCode repair_error_class(const absl::Status& /*status*/) const {
    return absl::StatusCode::kNotFound;
  }
  // Makes a missing destination exist (under a create disposition); `parked` are the elements
  // waiting for it. May yield to the mailbox.
  virtual RepairResult repair(const D& destination, const std::vector<const E*>& parked) = 0;
  // The status that fails the job for a fatal answer (names the destination, and the create
  // disposition for a NOT_FOUND).
  virtual absl::Status fatal_failure(const D& destination, const absl::Status& cause) const = 0;
  // The element as a failure handler sees it; `element` is empty for a serializer failure.
  virtual std::unique_ptr<FailedElement> failed_element(const D& destination,
                                                        std::optional<E> element,
                                                        absl::Status status,
                                                        bool service_rejection) const = 0;
};

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_ASYNC_SINK_ADAPTER_H_
