#include "gcpstream/connector/failure_handler.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::connector {
namespace {

class FailJob final : public FailureHandler {
 public:
  absl::Status handle(const FailedElement& e) override {
    return absl::Status(
        e.status().ok() ? absl::StatusCode::kInternal : e.status().code(),
        fmt::format("{} sink: record for {} failed ({}); the failure handler is fail_job",
                    e.connector(), e.describe_destination(), e.message()));
  }
  std::string name() const override { return "fail_job"; }
  bool drops() const override { return false; }
};

class LogAndDrop final : public FailureHandler {
 public:
  absl::Status handle(const FailedElement& e) override {
    spdlog::warn("{} sink: dropping a record for {}: {}", e.connector(), e.describe_destination(),
                 e.status());
    return absl::OkStatus();
  }
  std::string name() const override { return "log_and_drop"; }
};

class ToDeadLetterQueue final : public FailureHandler {
 public:
  explicit ToDeadLetterQueue(std::shared_ptr<DeadLetterQueue> queue) : queue_(std::move(queue)) {}
  absl::Status handle(const FailedElement& e) override { return queue_->offer(e); }
  absl::Status open(const DeadLetterQueueContext& context) override {
    return queue_->open(context);
  }
  absl::Status flush() override { return queue_->flush(); }
  absl::Status close() override { return queue_->close(); }
  std::string name() const override { return "dead_letter_queue"; }

 private:
  std::shared_ptr<DeadLetterQueue> queue_;
};

class Custom final : public FailureHandler {
 public:
  Custom(std::function<absl::Status(const FailedElement&)> fn, std::string name)
      : fn_(std::move(fn)), name_(std::move(name)) {}
  absl::Status handle(const FailedElement& e) override { return fn_(e); }
  std::string name() const override { return name_; }

 private:
  std::function<absl::Status(const FailedElement&)> fn_;
  std::string name_;
};

}  // namespace

std::shared_ptr<FailureHandler> FailureHandler::fail_job() { return std::make_shared<FailJob>(); }
std::shared_ptr<FailureHandler> FailureHandler::log_and_drop() {
  return std::make_shared<LogAndDrop>();
}
std::shared_ptr<FailureHandler> FailureHandler::send_to_dead_letter_queue(
    std::shared_ptr<DeadLetterQueue> queue) {
  return std::make_shared<ToDeadLetterQueue>(std::move(queue));
}
std::shared_ptr<FailureHandler> FailureHandler::custom(
    std::function<absl::Status(const FailedElement&)> fn, std::string name) {
  return std::make_shared<Custom>(std::move(fn), std::move(name));
}

}  // namespace gcpstream::connector
