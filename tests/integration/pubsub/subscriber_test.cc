// The StreamingPull subscriber client against the Pub/Sub emulator: receipt, acknowledgement,
// and the nack (ModifyAckDeadline 0) that makes the service redeliver at once.
#include "gcpstream/pubsub/client/subscriber.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
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
  std::vector<ReceivedMessage> received;
  SubscriberCallbacks callbacks;
  callbacks.on_messages = [&](std::vector<ReceivedMessage> batch) {
    std::lock_guard lock(mu);
    for (auto& m : batch) received.push_back(std::move(m));
  };
  callbacks.on_failure = [](absl::Status s) { ADD_FAILURE() << s; };
  auto stub =
      MakeGrpcSubscriberStub(grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
  Subscriber subscriber(stub, sub, SubscriberSettings{}, callbacks);
  subscriber.start();
  // Waits until `count` messages have arrived in total; returns what did arrive.
  const auto await_received = [&](std::size_t count, std::chrono::seconds patience) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard lock(mu);
        if (received.size() >= count) break;
      }
      std::this_thread::sleep_for(10ms);
    }
    std::lock_guard lock(mu);
    return received;
  };
  const auto first = await_received(20, 20s);
  ASSERT_EQ(first.size(), 20u) << "received " << first.size() << " of 20";
  // Acknowledge half and nack the other half while the stream stays open.
  std::vector<std::string> acked_ids, nacked_ids;
  std::set<std::string> acked_data, nacked_data;
  for (std::size_t i = 0; i < first.size(); ++i) {
    (i < 10 ? acked_ids : nacked_ids).push_back(first[i].ack_id);
    (i < 10 ? acked_data : nacked_data).insert(first[i].message.data());
  }
  subscriber.ack(acked_ids);
  subscriber.nack(nacked_ids);
  // The nacked ten come back at once (the service and the emulator both redeliver a nacked
  // message without waiting for its deadline; the emulator sends it to the open stream).
  // The patience stays below the 60 s the emulator holds a message that a closing stream
  // had outstanding, so a pass means the redelivery came from the nack.
  const auto all = await_received(30, 30s);
  std::set<std::string> redelivered;
  std::vector<std::string> redelivered_ids;
  for (std::size_t i = 20; i < all.size(); ++i) {
    redelivered.insert(all[i].message.data());
    redelivered_ids.push_back(all[i].ack_id);
  }
  EXPECT_EQ(redelivered, nacked_data) << "redelivered " << fmt::format("{}", redelivered);
  for (const auto& d : redelivered) {
    EXPECT_FALSE(acked_data.contains(d)) << "an acknowledged message came back: " << d;
  }
  subscriber.ack(redelivered_ids);
  acked_data.insert(redelivered.begin(), redelivered.end());
  subscriber.stop();
  ASSERT_TRUE(subscriber.await_terminated(std::chrono::steady_clock::now() + 10s));
  // Everything is acknowledged now; a pull finds nothing that was acknowledged on the stream.
  for (const auto& m : client.pull(sub, 20, 2s)) {
    EXPECT_FALSE(acked_data.contains(m.data()))
        << "an acknowledged message came back: " << m.data();
  }
}

}  // namespace
}  // namespace gcpstream::pubsub
