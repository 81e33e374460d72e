#include "gcpstream/pubsub/admin/topic_admin.h"

#include "gcpstream/pubsub/client/publisher_stub.h"

namespace gcpstream::pubsub {

absl::Status TopicCreateOptions::validate() const {
  if (enforce_in_transit && allowed_persistence_regions.empty()) {
    return absl::InvalidArgumentError(
        "topic_create_options: enforce_in_transit needs allowed_persistence_regions");
  }
  if (message_retention &&
      (*message_retention < std::chrono::minutes(10) || *message_retention > std::chrono::hours(24 * 31))) {
    return absl::InvalidArgumentError(
        "topic_create_options: message_retention must be between 10 minutes and 31 days");
  }
  return absl::OkStatus();
}

google::pubsub::v1::Topic TopicCreateOptions::to_proto(
    const connector::TopicDestination& topic) const {
  google::pubsub::v1::Topic t;
  t.set_name(topic.resource_name());
  if (message_retention) t.mutable_message_retention_duration()->set_seconds(message_retention->count());
  if (kms_key_name) t.set_kms_key_name(*kms_key_name);
  if (!allowed_persistence_regions.empty() || enforce_in_transit) {
    auto* policy = t.mutable_message_storage_policy();
    for (const auto& r : allowed_persistence_regions) policy->add_allowed_persistence_regions(r);
    policy->set_enforce_in_transit(enforce_in_transit);
  }
  return t;
}

namespace {

class GrpcTopicAdmin final : public TopicAdmin {
 public:
  GrpcTopicAdmin(std::shared_ptr<grpc::Channel> channel, std::chrono::milliseconds timeout)
      : stub_(google::pubsub::v1::Publisher::NewStub(std::move(channel))), timeout_(timeout) {}

  void async_create_topic(const connector::TopicDestination& topic,
                          const TopicCreateOptions& options,
                          std::function<void(absl::StatusOr<bool>)> done) override {
    struct Call {
      grpc::ClientContext context;
      google::pubsub::v1::Topic request;
      google::pubsub::v1::Topic response;
    };
    auto call = std::make_shared<Call>();
    call->request = options.to_proto(topic);
    call->context.set_deadline(std::chrono::system_clock::now() + timeout_);
    stub_->async()->CreateTopic(&call->context, &call->request, &call->response,
                                [call, done = std::move(done)](grpc::Status status) {
                                  if (status.ok()) {
                                    done(true);
                                  } else if (status.error_code() ==
                                             grpc::StatusCode::ALREADY_EXISTS) {
                                    done(false);
                                  } else {
                                    done(FromGrpc(status));
                                  }
                                });
  }

  void async_get_topic(
      const connector::TopicDestination& topic,
      std::function<void(absl::StatusOr<google::pubsub::v1::Topic>)> done) override {
    struct Call {
      grpc::ClientContext context;
      google::pubsub::v1::GetTopicRequest request;
      google::pubsub::v1::Topic response;
    };
    auto call = std::make_shared<Call>();
    call->request.set_topic(topic.resource_name());
    call->context.set_deadline(std::chrono::system_clock::now() + timeout_);
    stub_->async()->GetTopic(&call->context, &call->request, &call->response,
                             [call, done = std::move(done)](grpc::Status status) {
                               if (status.ok()) {
                                 done(std::move(call->response));
                               } else {
                                 done(FromGrpc(status));
                               }
                             });
  }

 private:
  std::unique_ptr<google::pubsub::v1::Publisher::Stub> stub_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

std::shared_ptr<TopicAdmin> MakeGrpcTopicAdmin(std::shared_ptr<grpc::Channel> channel,
                                               std::chrono::milliseconds timeout) {
  return std::make_shared<GrpcTopicAdmin>(std::move(channel), timeout);
}

}  // namespace gcpstream::pubsub
