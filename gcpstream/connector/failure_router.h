#ifndef GCPSTREAM_CONNECTOR_FAILURE_ROUTER_H_
#define GCPSTREAM_CONNECTOR_FAILURE_ROUTER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "gcpstream/api/metrics.h"
#include "gcpstream/connector/failure_handler.h"

namespace gcpstream::connector {

// Fails a job being refused wholesale under a dropping policy: once `max` confirmed service
// rejections arrive in a row with no success between them, on_rejection() returns an error
// naming max_consecutive_rejections, the count and the last status. Any success resets the
// count; -1 disables the bound (default 100, the spec's). Serializer failures never count.
class MaxConsecutiveRejections {
 public:
  static constexpr int kDisabled = -1;
  static constexpr int kDefault = 100;
  MaxConsecutiveRejections(int max, std::string connector)
      : max_(max), connector_(std::move(connector)) {}
  absl::Status on_rejection(const absl::Status& status);
  void on_success() { count_ = 0; }
  int count() const { return count_; }

 private:
  int max_;
  std::string connector_;
  int count_ = 0;
};

// Everything a sink does with a routable failure, in the order the spec fixes:
// numRecordsSendErrors is incremented immediately before the handler is called; a confirmed
// service rejection is counted under errorClass.<CODE>.errors and toward
// max_consecutive_rejections (after the handler saw it). Writer thread only.
class FailureRouter {
 public:
  FailureRouter(std::string connector, std::shared_ptr<FailureHandler> handler,
                int max_consecutive_rejections, MetricGroup& group);

  // A record the serializer rejected.
  absl::Status route_serialization_failure(const FailedElement& element);
  // A record the service refused on its own (already confirmed by an isolation pass).
  absl::Status route_rejection(const FailedElement& element);
  // For refusals routed later than they arrive (parked, then routed in write order): counts
  // one toward max_consecutive_rejections now, in arrival order, so the successes reported
  // between them break the run. Returns the bound's error once reached; the caller fails the
  // job after routing that refusal with route_counted_rejection().
  absl::Status count_rejection(const absl::Status& status) {
    return rejections_.on_rejection(status);
  }
  // route_rejection() for a refusal count_rejection() already counted.
  absl::Status route_counted_rejection(const FailedElement& element);
  // A record was delivered: the consecutive-rejection run is over.
  void on_success() {
    rejections_.on_success();
    delivered_.inc_single_writer();
  }
  // Counts a failure by code without routing it (e.g. each entry failed by a missing table).
  void count_error_class(absl::StatusCode code);

  absl::Status open(const DeadLetterQueueContext& context) { return handler_->open(context); }
  absl::Status flush() { return handler_->flush(); }
  absl::Status close() { return handler_->close(); }
  const FailureHandler& handler() const { return *handler_; }

 private:
  std::string connector_;
  std::shared_ptr<FailureHandler> handler_;
  MaxConsecutiveRejections rejections_;
  MetricGroup& group_;
  Counter& send_errors_;
  // Failures before any RPC (serializer, precheck): counted in numRecordsSendErrors but never
  // in numRecordsSend, so "stored" = numRecordsSend - (numRecordsSendErrors - recordsRefused).
  Counter& refused_;
  // Records the service confirmed (recordsDelivered): what the run summary reports as "out".
  Counter& delivered_;
};

// The name used in errorClass.<CODE>.errors: the gRPC code's name, or UNCLASSIFIED.
std::string ErrorClassName(absl::StatusCode code);

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_FAILURE_ROUTER_H_
