#ifndef GCPSTREAM_CONNECTOR_FAILURE_HANDLER_H_
#define GCPSTREAM_CONNECTOR_FAILURE_HANDLER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "gcpstream/connector/dead_letter_queue.h"
#include "gcpstream/connector/failed_element.h"

namespace gcpstream::connector {

// The policy for the two data-shaped failures a sink routes: a record its serializer rejected,
// and a record the service refused on its own (confirmed by an isolation pass). Outages and
// configuration errors never reach it.
//
// handle() runs on the writer's thread. OK means "dealt with" (the record is dropped from the
// sink's point of view); an error fails the ongoing write or checkpoint. Handlers backed by a
// dead-letter queue forward its lifecycle (open/flush/close); the others have nothing to do
// there.
class FailureHandler {
 public:
  virtual ~FailureHandler() = default;
  virtual absl::Status handle(const FailedElement& element) = 0;
  virtual absl::Status open(const DeadLetterQueueContext& context) {
    (void)context;
    return absl::OkStatus();
  }
  virtual absl::Status flush() { return absl::OkStatus(); }
  virtual absl::Status close() { return absl::OkStatus(); }
  // Short name for logs and descriptions: "fail_job", "log_and_drop", "dead_letter_queue".
  virtual std::string name() const = 0;
  // Whether handle() may keep the job running after a failure (anything but fail_job).
  virtual bool drops() const { return true; }

  // The default: every routed failure fails the job.
  static std::shared_ptr<FailureHandler> fail_job();
  // Logs each failure at WARN and drops the record.
  static std::shared_ptr<FailureHandler> log_and_drop();
  // Forwards each failure to `queue` (and drives its lifecycle).
  static std::shared_ptr<FailureHandler> send_to_dead_letter_queue(
      std::shared_ptr<DeadLetterQueue> queue);
  // A handler of your own; `fn` returns OK to drop, an error to fail.
  static std::shared_ptr<FailureHandler> custom(
      std::function<absl::Status(const FailedElement&)> fn, std::string name = "custom");
  // A handler for a connector's own element type, e.g. custom_typed<FailedMutation>(...):
  // elements of another type fail the job.
  template <typename Typed>
  static std::shared_ptr<FailureHandler> custom_typed(std::function<absl::Status(const Typed&)> fn,
                                                      std::string name = "custom") {
    return custom(
        [fn = std::move(fn)](const FailedElement& e) -> absl::Status {
          const auto* typed = dynamic_cast<const Typed*>(&e);
          if (typed == nullptr) {
            return absl::InternalError(
                "failure handler received an element of another "
                "connector");
          }
          return fn(*typed);
        },
        std::move(name));
  }
};

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_FAILURE_HANDLER_H_
