// Smoke test: the generated Pub/Sub stubs talk to the real emulator over an insecure channel.
#include <gtest/gtest.h>

#include <set>

#include "google/pubsub/v1/pubsub.grpc.pb.h"
#include "tests/support/emulators.h"

namespace gcpstream {
namespace {

namespace ps = ::google::pubsub::v1;
using testing::Emulator;

std::chrono::system_clock::time_point Deadline(int seconds) {
  return std::chrono::system_clock::now() + std::chrono::seconds(seconds);
}

TEST(PubSubEmulatorSmokeTest, PublishThenStreamingPullAndAcknowledge) {
  auto channel = testing::EmulatorChannel(Emulator::kPubSub);
  ASSERT_NE(channel, nullptr);
  auto publisher = ps::Publisher::NewStub(channel);
  auto subscriber = ps::Subscriber::NewStub(channel);
  const std::string topic = "projects/smoke/topics/" + testing::UniqueId("topic");
  const std::string subscription =
      "projects/smoke/subscriptions/" + testing::UniqueId("subscription");

  {
    ps::Topic request;
    request.set_name(topic);
    ps::Topic response;
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline(10));
    auto status = publisher->CreateTopic(&ctx, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  {
    ps::Subscription request;
    request.set_name(subscription);
    request.set_topic(topic);
    request.set_ack_deadline_seconds(30);
    ps::Subscription response;
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline(10));
    auto status = subscriber->CreateSubscription(&ctx, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  std::set<std::string> published;
  {
    ps::PublishRequest request;
    request.set_topic(topic);
    for (int i = 0; i < 5; ++i) {
      auto* m = request.add_messages();
      m->set_data("message-" + std::to_string(i));
      (*m->mutable_attributes())["seq"] = std::to_string(i);
      published.insert(m->data());
    }
    ps::PublishResponse response;
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline(10));
    auto status = publisher->Publish(&ctx, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.message_ids_size(), 5);
  }
  std::set<std::string> received;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline(30));
    auto stream = subscriber->StreamingPull(&ctx);
    ps::StreamingPullRequest open;
    open.set_subscription(subscription);
    open.set_stream_ack_deadline_seconds(30);
    ASSERT_TRUE(stream->Write(open));
    ps::StreamingPullResponse response;
    while (received.size() < published.size() && stream->Read(&response)) {
      ps::StreamingPullRequest ack;
      for (const auto& rm : response.received_messages()) {
        received.insert(rm.message().data());
        ack.add_ack_ids(rm.ack_id());
      }
      ASSERT_TRUE(stream->Write(ack));
    }
    // A StreamingPull never ends by itself (measured): cancel it.
    ctx.TryCancel();
    stream->Finish();
  }
  EXPECT_EQ(received, published) << "received " << received.size() << " of " << published.size();
}

}  // namespace
}  // namespace gcpstream
