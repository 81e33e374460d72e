// The StreamingPull subscriber client against the Pub/Sub emulator: receipt, acknowledgement,
// and the nack (ModifyAckDeadline 0) that makes the service redeliver at once.
#include "gcpstream/pubsub/client/subscriber.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>

#include "tests/support/emulators.h"
#include "tests/support/pubsub_emulator.h"

namespace gcpstream::pubsub {
namespace {

using namespace std::chrono_literals;
using testing::Emulator;

constexpr char kProject[] = "subscriber-it";

TEST(SubscriberIT, ReceivesThenANackRedeliversAtOnce) {
  const auto endpoint = testing::EmulatorEndpoint(Emulator::kPubSub);
  ASSERT_FALSE(endpoint.empty());
  testing::PubSubEmulatorClient client(endpoint);
  const auto id = testing::UniqueId("nack");
  const auto topic = testing::TopicName(kProject, id);
  const auto sub = testing::SubscriptionName(kProject, id);
  ASSERT_TRUE(client.create_topic(topic).ok());
  ASSERT_TRUE(client.create_subscription(sub, topic, false, 10).ok());
  std::vector<google::pubsub::v1::PubsubMessage> batch(20);
  for (int i = 0; i < 20; ++i) batch[i].set_data(fmt::format("m{}", i));
  ASSERT_TRUE(client.publish(topic, batch).ok());

  std::mutex mu;
  std::vector<std::string> ack_ids;
  SubscriberCallbacks callbacks;
  callbacks.on_message = [&](ReceivedMessage m) {
    std::lock_guard lock(mu);
    ack_ids.push_back(m.ack_id);
  };
  callbacks.on_failure = [](absl::Status s) { ADD_FAILURE() << s; };
  auto stub =
      MakeGrpcSubscriberStub(grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
  Subscriber subscriber(stub, sub, SubscriberSettings{}, callbacks);
  subscriber.start();
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard lock(mu);
      if (ack_ids.size() >= 20) break;
    }
    std::this_thread::sleep_for(10ms);
  }
  std::vector<std::string> ids;
  {
    std::lock_guard lock(mu);
    ids = ack_ids;
  }
  ASSERT_EQ(ids.size(), 20u) << "received " << ids.size();
  // Acknowledge half, nack the other half, and stop.
  subscriber.ack(std::vector<std::string>(ids.begin(), ids.begin() + 10));
  subscriber.nack(std::vector<std::string>(ids.begin() + 10, ids.end()));
  subscriber.stop();
  ASSERT_TRUE(subscriber.await_terminated(std::chrono::steady_clock::now() + 10s));
  const auto stopped = std::chrono::steady_clock::now();
  // The nacked ten come back; the acknowledged ones never do.
  auto back = client.pull(sub, 10, 90s);
  std::set<std::string> data;
  for (const auto& m : back) data.insert(m.data());
  EXPECT_EQ(data.size(), 10u) << "redelivered " << data.size();
  // The service redelivers a nacked message at once. The emulator sends it straight back to
  // the still-open stream and, once that stream is cancelled, holds it for about 60 s whatever
  // the deadline (10 s here) or the nack says: so this pins non-loss, not promptness.
  EXPECT_LT(std::chrono::steady_clock::now() - stopped, 90s);
  auto more = client.pull(sub, 1, 2s);
  EXPECT_TRUE(more.empty()) << "an acknowledged message came back: " << more[0].data();
}

}  // namespace
}  // namespace gcpstream::pubsub
