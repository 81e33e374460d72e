#include "gcpstream/pubsub/admin/subscription_admin.h"

#include <fmt/format.h>

#include "gcpstream/pubsub/client/publisher_stub.h"

namespace gcpstream::pubsub {

absl::Status SubscriptionCreateOptions::validate() const {
  if (topic.project.empty() || topic.topic.empty()) {
    return absl::InvalidArgumentError("subscription_create_options: topic is required");
  }
  if (ack_deadline && (ack_deadline->count() < 10 || ack_deadline->count() > 600)) {
    return absl::InvalidArgumentError(
        "subscription_create_options: ack_deadline must be between 10 s and 600 s");
  }
  if (message_retention && (*message_retention < std::chrono::minutes(10) ||
                            *message_retention > std::chrono::hours(24 * 7))) {
    return absl::InvalidArgumentError(
        "subscription_create_options: message_retention must be between 10 minutes and 7 days");
  }
  if (expiration_ttl && never_expire) {
    return absl::InvalidArgumentError(
        "subscription_create_options: expiration_ttl and never_expire are exclusive");
  }
  if (expiration_ttl && *expiration_ttl < std::chrono::hours(24)) {
    return absl::InvalidArgumentError(
        "subscription_create_options: expiration_ttl must be at least 1 day");
  }
  if (dead_letter_policy && (dead_letter_policy->max_delivery_attempts < 5 ||
                             dead_letter_policy->max_delivery_attempts > 100)) {
    return absl::InvalidArgumentError(
        "subscription_create_options: dead_letter_policy.max_delivery_attempts must be 5..100");
  }
  return absl::OkStatus();
}

google::pubsub::v1::Subscription SubscriptionCreateOptions::to_proto(
    const connector::SubscriptionDestination& subscription) const {
  google::pubsub::v1::Subscription s;
  s.set_name(subscription.resource_name());
  s.set_topic(topic.resource_name());
  if (ack_deadline) s.set_ack_deadline_seconds(static_cast<int>(ack_deadline->count()));
  if (enable_message_ordering) s.set_enable_message_ordering(*enable_message_ordering);
  if (message_retention) {
    s.mutable_message_retention_duration()->set_seconds(message_retention->count());
  }
  if (retain_acked_messages) s.set_retain_acked_messages(*retain_acked_messages);
  if (never_expire) {
    s.mutable_expiration_policy();  // an empty TTL: never expires
  } else if (expiration_ttl) {
    s.mutable_expiration_policy()->mutable_ttl()->set_seconds(expiration_ttl->count());
  }
  if (dead_letter_policy) {
    auto* p = s.mutable_dead_letter_policy();
    p->set_dead_letter_topic(dead_letter_policy->topic.resource_name());
    p->set_max_delivery_attempts(dead_letter_policy->max_delivery_attempts);
  }
  if (filter) s.set_filter(*filter);
  return s;
}

namespace {

class GrpcSubscriptionAdmin final : public SubscriptionAdmin {
 public:
  GrpcSubscriptionAdmin(std::shared_ptr<grpc::Channel> channel, std::chrono::milliseconds timeout)
      : stub_(google::pubsub::v1::Subscriber::NewStub(std::move(channel))), timeout_(timeout) {}

  absl::StatusOr<google::pubsub::v1::Subscription> get_subscription(
      const connector::SubscriptionDestination& subscription) override {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout_);
    google::pubsub::v1::GetSubscriptionRequest request;
    request.set_subscription(subscription.resource_name());
    google::pubsub::v1::Subscription response;
    grpc::Status status = stub_->GetSubscription(&context, request, &response);
    if (!status.ok()) return FromGrpc(status);
    return response;
  }

  absl::StatusOr<bool> create_subscription(const connector::SubscriptionDestination& subscription,
                                           const SubscriptionCreateOptions& options) override {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout_);
    google::pubsub::v1::Subscription request = options.to_proto(subscription);
    google::pubsub::v1::Subscription response;
    grpc::Status status = stub_->CreateSubscription(&context, request, &response);
    if (status.ok()) return true;
    if (status.error_code() == grpc::StatusCode::ALREADY_EXISTS) return false;
    return FromGrpc(status);
  }

  absl::Status seek_to_time(const connector::SubscriptionDestination& subscription,
                            std::int64_t time_ms) override {
    google::pubsub::v1::SeekRequest request;
    request.set_subscription(subscription.resource_name());
    request.mutable_time()->set_seconds(time_ms / 1000);
    request.mutable_time()->set_nanos(static_cast<int>((time_ms % 1000) * 1000000));
    return seek(request);
  }

  absl::Status seek_to_snapshot(const connector::SubscriptionDestination& subscription,
                                const std::string& snapshot) override {
    google::pubsub::v1::SeekRequest request;
    request.set_subscription(subscription.resource_name());
    request.set_snapshot(snapshot);
    return seek(request);
  }

 private:
  absl::Status seek(const google::pubsub::v1::SeekRequest& request) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout_);
    google::pubsub::v1::SeekResponse response;
    return FromGrpc(stub_->Seek(&context, request, &response));
  }

  std::unique_ptr<google::pubsub::v1::Subscriber::Stub> stub_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

std::shared_ptr<SubscriptionAdmin> MakeGrpcSubscriptionAdmin(std::shared_ptr<grpc::Channel> channel,
                                                             std::chrono::milliseconds timeout) {
  return std::make_shared<GrpcSubscriptionAdmin>(std::move(channel), timeout);
}

}  // namespace gcpstream::pubsub
