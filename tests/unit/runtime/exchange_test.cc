#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "gcpstream/runtime/channel.h"
#include "gcpstream/runtime/exchange.h"
#include "gcpstream/runtime/mailbox.h"
#include "gcpstream/runtime/metric_registry.h"
#include "gcpstream/runtime/watermark_valve.h"

namespace gcpstream::runtime {
namespace {

using namespace std::chrono_literals;

ChannelElement<int> Batch(int value) {
  ChannelElement<int> e;
  e.records.push_back(StreamRecord<int>{value, kNoTimestamp});
  return e;
}

TEST(InputGateTest, AFullChannelRefusesUntilTheConsumerTakesAndThenNotifiesTheProducer) {
  std::atomic<int> data_signals{0};
  InputGate<int> gate(1, 2, [&] { data_signals++; });
  std::atomic<int> space_signals{0};
  gate.set_space_listener(0, [&] { space_signals++; });
  auto a = Batch(1), b = Batch(2), c = Batch(3);
  EXPECT_TRUE(gate.try_push(0, a));
  EXPECT_TRUE(gate.try_push(0, b));
  EXPECT_FALSE(gate.try_push(0, c)) << "capacity is 2 elements";
  EXPECT_EQ(c.records.size(), 1u) << "a refused element stays with the producer";
  auto first = gate.poll();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->second.records[0].value, 1);
  EXPECT_EQ(space_signals.load(), 1);
  EXPECT_TRUE(gate.try_push(0, c));
  EXPECT_EQ(gate.poll()->second.records[0].value, 2);
  EXPECT_EQ(gate.poll()->second.records[0].value, 3);
  EXPECT_FALSE(gate.poll().has_value());
  EXPECT_EQ(data_signals.load(), 3);
}

TEST(InputGateTest, BlockedChannelsAreSkippedUntilUnblocked) {
  InputGate<int> gate(2, 4, [] {});
  auto a = Batch(10), b = Batch(20);
  ASSERT_TRUE(gate.try_push(0, a));
  ASSERT_TRUE(gate.try_push(1, b));
  gate.block(0);
  auto got = gate.poll();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->first, 1);
  EXPECT_FALSE(gate.poll().has_value()) << "channel 0 is blocked";
  gate.unblock_all();
  EXPECT_EQ(gate.poll()->first, 0);
}

// A producer subtask writing through an ExchangeOutput into a gate with a tiny capacity: it
// must wait (yielding, not spinning) while the consumer is slow, never exceed the capacity,
// and deliver every record in order.
TEST(ExchangeOutputTest, BackpressuresAProducerWithoutLosingOrReorderingRecords) {
  constexpr int kRecords = 2000;
  std::shared_ptr<InputGate<int>> gate;
  MailboxProcessor producer_mailbox;
  gate = std::make_shared<InputGate<int>>(1, 2, [] {});
  std::atomic<std::size_t> max_queued{0};
  std::atomic<bool> producer_done{false};
  absl::Status producer_status;
  std::thread producer([&] {
    producer_mailbox.bind_to_current_thread();
    MetricRegistry registry;
    auto executor = producer_mailbox.executor(2);
    OperatorContext ctx;
    ctx.subtask_index = 0;
    ctx.mailbox_executor = executor.get();
    ctx.mailbox = producer_mailbox.shared_mailbox();
    ctx.priority = 2;
    ctx.metric_group = &registry.group({{"t", "x"}});
    ExchangeOptions options;
    options.records_per_buffer = 8;
    ExchangeOutput<int> out({gate}, Partitioning::kForward, nullptr, options, ctx);
    producer_status = out.open();
    for (int i = 0; i < kRecords && producer_status.ok(); ++i) {
      producer_status = out.collect(StreamRecord<int>{i, kNoTimestamp});
      max_queued = std::max<std::size_t>(max_queued.load(), gate->queued());
    }
    if (producer_status.ok()) producer_status = out.finish();
    producer_done = true;
  });
  std::vector<int> received;
  bool ended = false;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!ended && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50us);  // a slow consumer
    auto element = gate->poll();
    if (!element) continue;
    for (auto& r : element->second.records) received.push_back(r.value);
    if (element->second.event &&
        element->second.event->kind == ChannelEvent::Kind::kEndOfPartition) {
      ended = true;
    }
  }
  producer.join();
  ASSERT_TRUE(producer_status.ok()) << producer_status;
  ASSERT_TRUE(ended) << "end of partition never arrived; received " << received.size();
  ASSERT_EQ(received.size(), static_cast<std::size_t>(kRecords));
  for (int i = 0; i < kRecords; ++i) ASSERT_EQ(received[i], i);
  EXPECT_LE(max_queued.load(), 2u);
}

TEST(WatermarkValveTest, CombinesTheMinimumOfActiveInputsAndNeverGoesBack) {
  WatermarkValve valve(2);
  EXPECT_FALSE(valve.on_watermark(0, 100).watermark.has_value()) << "input 1 still at -inf";
  auto change = valve.on_watermark(1, 50);
  ASSERT_TRUE(change.watermark.has_value());
  EXPECT_EQ(*change.watermark, 50);
  EXPECT_EQ(*valve.on_watermark(1, 200).watermark, 100);
  EXPECT_FALSE(valve.on_watermark(0, 90).watermark.has_value()) << "watermarks never go back";
}

TEST(WatermarkValveTest, AnIdleInputStopsHoldingTheWatermarkBack) {
  WatermarkValve valve(2);
  valve.on_watermark(0, 100);
  auto change = valve.on_status(1, /*idle=*/true);
  ASSERT_TRUE(change.watermark.has_value());
  EXPECT_EQ(*change.watermark, 100);
  EXPECT_FALSE(change.idle.has_value()) << "one input is still active";
  change = valve.on_status(0, true);
  ASSERT_TRUE(change.idle.has_value());
  EXPECT_TRUE(*change.idle) << "all inputs idle: the combined output is idle";
  change = valve.on_watermark(1, 150);
  ASSERT_TRUE(change.idle.has_value());
  EXPECT_FALSE(*change.idle);
}

TEST(WatermarkValveTest, FinishedInputsAreIgnoredAndAllFinishedMeansEnd) {
  WatermarkValve valve(2);
  valve.on_watermark(0, 10);
  EXPECT_EQ(*valve.on_finished(1).watermark, 10);
  EXPECT_EQ(*valve.on_finished(0).watermark, kMaxWatermark);
}

TEST(KeyGroupTest, EveryKeyGroupMapsToExactlyOneSubtaskInRange) {
  for (int parallelism : {1, 2, 3, 7, 128}) {
    for (int kg = 0; kg < 128; ++kg) {
      const int index = OperatorIndexForKeyGroup(kg, 128, parallelism);
      ASSERT_GE(index, 0);
      ASSERT_LT(index, parallelism);
    }
  }
  EXPECT_EQ(KeyGroupFor(42, 128), KeyGroupFor(42, 128)) << "deterministic";
}

}  // namespace
}  // namespace gcpstream::runtime
