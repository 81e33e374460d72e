#include "gcpstream/connector/failure_router.h"

#include <fmt/format.h>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::connector {

absl::Status MaxConsecutiveRejections::on_rejection(const absl::Status& status) {
  ++count_;
  if (max_ == kDisabled || count_ < max_) return absl::OkStatus();
  return absl::Status(
      absl::StatusCode::kFailedPrecondition,
      fmt::format("{} sink: {} confirmed rejections in a row without a single success reached "
                  "max_consecutive_rejections ({}); the last rejection was {}. The service is "
                  "refusing the stream wholesale; fix the data or the serializer (or raise or "
                  "disable the bound with -1)",
                  connector_, count_, max_, status));
}

std::string ErrorClassName(absl::StatusCode code) {
  if (code == absl::StatusCode::kOk) return "UNCLASSIFIED";
  std::string name = absl::StatusCodeToString(code);
  return name.empty() ? "UNCLASSIFIED" : name;
}

FailureRouter::FailureRouter(std::string connector, std::shared_ptr<FailureHandler> handler,
                             int max_consecutive_rejections, MetricGroup& group)
    : connector_(connector),
      handler_(handler ? std::move(handler) : FailureHandler::fail_job()),
      rejections_(max_consecutive_rejections, std::move(connector)),
      group_(group),
      send_errors_(group.counter(metric_names::kNumRecordsSendErrors)),
      refused_(group.counter("recordsRefused")),
      delivered_(group.counter("recordsDelivered")) {}

void FailureRouter::count_error_class(absl::StatusCode code) {
  group_.add_group("errorClass").add_group(ErrorClassName(code)).counter("errors").inc();
}

absl::Status FailureRouter::route_serialization_failure(const FailedElement& element) {
  send_errors_.inc();
  refused_.inc();
  return handler_->handle(element);
}

absl::Status FailureRouter::route_counted_rejection(const FailedElement& element) {
  count_error_class(element.status().code());
  send_errors_.inc();
  return handler_->handle(element);
}

absl::Status FailureRouter::route_rejection(const FailedElement& element) {
  GCP_RETURN_IF_ERROR(route_counted_rejection(element));
  return rejections_.on_rejection(element.status());
}

}  // namespace gcpstream::connector
