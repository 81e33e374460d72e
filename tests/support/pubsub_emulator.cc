#include "tests/support/pubsub_emulator.h"

namespace gcpstream::testing {
namespace {

std::chrono::system_clock::time_point In(std::chrono::milliseconds d) {
  return std::chrono::system_clock::now() + d;
}

absl::Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

}  // namespace

PubSubEmulatorClient::PubSubEmulatorClient(const std::string& endpoint) {
  auto channel = grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials());
  publisher_ = google::pubsub::v1::Publisher::NewStub(channel);
  subscriber_ = google::pubsub::v1::Subscriber::NewStub(channel);
}

absl::Status PubSubEmulatorClient::create_topic(const std::string& topic_name) {
  google::pubsub::v1::Topic request;
  request.set_name(topic_name);
  google::pubsub::v1::Topic response;
  grpc::ClientContext ctx;
  ctx.set_deadline(In(std::chrono::seconds(10)));
  return FromGrpc(publisher_->CreateTopic(&ctx, request, &response));
}

absl::StatusOr<google::pubsub::v1::Topic> PubSubEmulatorClient::get_topic(
    const std::string& topic_name) {
  google::pubsub::v1::GetTopicRequest request;
  request.set_topic(topic_name);
  google::pubsub::v1::Topic response;
  grpc::ClientContext ctx;
  ctx.set_deadline(In(std::chrono::seconds(10)));
  auto s = publisher_->GetTopic(&ctx, request, &response);
  if (!s.ok()) return FromGrpc(s);
  return response;
}

absl::Status PubSubEmulatorClient::create_subscription(const std::string& subscription_name,
                                                       const std::string& topic_name,
                                                       bool ordering, int ack_deadline_seconds) {
  google::pubsub::v1::Subscription request;
  request.set_name(subscription_name);
  request.set_topic(topic_name);
  request.set_ack_deadline_seconds(ack_deadline_seconds);
  request.set_enable_message_ordering(ordering);
  google::pubsub::v1::Subscription response;
  grpc::ClientContext ctx;
  ctx.set_deadline(In(std::chrono::seconds(10)));
  return FromGrpc(subscriber_->CreateSubscription(&ctx, request, &response));
}

absl::Status PubSubEmulatorClient::publish(
    const std::string& topic_name, const std::vector<google::pubsub::v1::PubsubMessage>& messages) {
  google::pubsub::v1::PublishRequest request;
  request.set_topic(topic_name);
  for (const auto& m : messages) *request.add_messages() = m;
  google::pubsub::v1::PublishResponse response;
  grpc::ClientContext ctx;
  ctx.set_deadline(In(std::chrono::seconds(10)));
  return FromGrpc(publisher_->Publish(&ctx, request, &response));
}

std::vector<google::pubsub::v1::PubsubMessage> PubSubEmulatorClient::pull(
    const std::string& subscription_name, std::size_t count, std::chrono::milliseconds timeout) {
  std::vector<google::pubsub::v1::PubsubMessage> out;
  grpc::ClientContext ctx;
  ctx.set_deadline(In(timeout));
  auto stream = subscriber_->StreamingPull(&ctx);
  google::pubsub::v1::StreamingPullRequest open;
  open.set_subscription(subscription_name);
  open.set_stream_ack_deadline_seconds(60);
  if (!stream->Write(open)) return out;
  google::pubsub::v1::StreamingPullResponse response;
  while (out.size() < count && stream->Read(&response)) {
    google::pubsub::v1::StreamingPullRequest ack;
    for (const auto& rm : response.received_messages()) {
      out.push_back(rm.message());
      ack.add_ack_ids(rm.ack_id());
    }
    stream->Write(ack);
  }
  // A StreamingPull never ends by itself: cancel it.
  ctx.TryCancel();
  stream->Finish();
  return out;
}

}  // namespace gcpstream::testing
