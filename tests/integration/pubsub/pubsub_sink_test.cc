// The Pub/Sub sink through its public builder against the Pub/Sub emulator, and through the
// fault proxy for what the emulator cannot do (batch rejections, a stalled topic, outages).
#include "gcpstream/pubsub/sink/pubsub_sink.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <latch>
#include <map>
#include <set>
#include <thread>

#include "gcpstream/pubsub/sink/pubsub_dead_letter_queue.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "tests/fakes/fault_proxy.h"
#include "tests/support/emulators.h"
#include "tests/support/fake_contexts.h"
#include "tests/support/pubsub_emulator.h"

namespace gcpstream::pubsub {
namespace {

using namespace std::chrono_literals;
using connector::TopicDestination;
using testing::Emulator;
using ::testing::HasSubstr;
using testing::PubSubEmulatorClient;

constexpr char kProject[] = "sink-it";

struct Record {
  std::string topic;
  std::string data;
  std::string key;
  std::map<std::string, std::string> attributes;
};

PubSubSerializationSchema<Record> Schema() {
  return PubSubSerializationSchema<Record>::payload([](const Record& r) { return r.data; })
      .with_attributes([](const Record& r) { return r.attributes; })
      .with_ordering_key([](const Record& r) { return r.key; });
}

class PubSubSinkIT : public ::testing::Test {
 protected:
  void SetUp() override {
    endpoint_ = testing::EmulatorEndpoint(Emulator::kPubSub);
    ASSERT_FALSE(endpoint_.empty());
    client_ = std::make_unique<PubSubEmulatorClient>(endpoint_);
  }

  // A topic id with a subscription attached.
  std::string TopicWithSubscription(bool ordering = false) {
    const std::string id = testing::UniqueId("topic");
    EXPECT_TRUE(client_->create_topic(testing::TopicName(kProject, id)).ok());
    EXPECT_TRUE(client_
                    ->create_subscription(testing::SubscriptionName(kProject, id + "-sub"),
                                          testing::TopicName(kProject, id), ordering)
                    .ok());
    return id;
  }

  std::vector<google::pubsub::v1::PubsubMessage> Pull(const std::string& topic_id, std::size_t n) {
    return client_->pull(testing::SubscriptionName(kProject, topic_id + "-sub"), n, 20s);
  }

  std::unique_ptr<SinkWriter<Record>> Writer(PubSubSink<Record>::Builder builder,
                                             WriterInitContext& context) {
    auto sink = builder.build();
    EXPECT_TRUE(sink.ok()) << sink.status();
    auto writer = (*sink)->create_writer(context);
    EXPECT_TRUE(writer.ok()) << writer.status();
    return std::move(*writer);
  }

  PubSubSink<Record>::Builder Builder(const std::string& endpoint) {
    auto b = PubSubSink<Record>::builder();
    b.destination_resolver([](const Record& r, const SinkWriterContext&) {
       return std::optional<TopicDestination>(TopicDestination::of(kProject, r.topic));
     })
        .serializer(Schema())
        .emulator_endpoint(endpoint);
    return b;
  }

  std::string endpoint_;
  std::unique_ptr<PubSubEmulatorClient> client_;
  testing::TestMailbox mailbox_;
  testing::FakeWriterInitContext context_{mailbox_};
  SinkWriterContext ctx_;
};

TEST_F(PubSubSinkIT, DynamicDestinationsAreCreatedWithTheirOptionsAndReceiveTheirRecords) {
  const std::string a = testing::UniqueId("auto-a");
  const std::string b = testing::UniqueId("auto-b");
  TopicCreateOptions create;
  create.message_retention = std::chrono::hours(48);
  create.kms_key_name = "projects/p/locations/l/keyRings/r/cryptoKeys/k";
  create.allowed_persistence_regions = {"europe-west1", "europe-west4"};
  create.enforce_in_transit = true;
  auto writer = Writer(Builder(endpoint_).topic_create_options(create), context_);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(writer->write({i % 2 == 0 ? a : b, "m" + std::to_string(i)}, ctx_).ok());
  }
  ASSERT_TRUE(writer->flush(false).ok());
  EXPECT_EQ(context_.metric("topicsCreated"), 2);
  for (const auto& id : {a, b}) {
    auto topic = client_->get_topic(testing::TopicName(kProject, id));
    ASSERT_TRUE(topic.ok()) << id << ": " << topic.status();
    EXPECT_EQ(topic->message_retention_duration().seconds(), 48 * 3600);
    EXPECT_EQ(topic->kms_key_name(), create.kms_key_name);
    ASSERT_EQ(topic->message_storage_policy().allowed_persistence_regions_size(), 2);
    EXPECT_TRUE(topic->message_storage_policy().enforce_in_transit());
  }
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(PubSubSinkIT, AttributesAndOrderingKeysArrive) {
  const std::string topic = TopicWithSubscription(/*ordering=*/true);
  PubSubPublisherOptions options;
  options.enable_message_ordering = true;
  auto writer = Writer(Builder(endpoint_).publisher_options(options), context_);
  for (int i = 0; i < 20; ++i) {
    Record r{topic, std::to_string(i), i % 2 == 0 ? "even" : "odd", {{"seq", std::to_string(i)}}};
    ASSERT_TRUE(writer->write(r, ctx_).ok());
  }
  ASSERT_TRUE(writer->flush(false).ok());
  auto messages = Pull(topic, 20);
  ASSERT_EQ(messages.size(), 20u) << "received " << messages.size() << " of 20";
  std::map<std::string, std::vector<int>> by_key;
  for (const auto& m : messages) {
    EXPECT_EQ(m.attributes().at("seq"), m.data());
    by_key[m.ordering_key()].push_back(std::stoi(m.data()));
  }
  for (auto& [key, seqs] : by_key) {
    EXPECT_TRUE(std::is_sorted(seqs.begin(), seqs.end())) << "key " << key << " out of order";
  }
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(PubSubSinkIT, WithThresholdsNothingReachesOnlyFlushDeliversAcrossRepeatedCycles) {
  const std::string topic = TopicWithSubscription();
  PubSubPublisherOptions options;
  options.batch_element_count_threshold = 1000;
  options.batch_request_byte_threshold = 10'000'000;
  options.batch_delay_threshold = std::chrono::hours(1);
  auto writer = Writer(Builder(endpoint_).publisher_options(options), context_);
  for (int cycle = 0; cycle < 3; ++cycle) {
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(writer->write({topic, "x"}, ctx_).ok());
    EXPECT_EQ(context_.metric("inFlightMessages"), 10) << "batched, not sent";
    ASSERT_TRUE(writer->flush(false).ok());
    EXPECT_EQ(context_.metric("inFlightMessages"), 0) << "flush drains the in-flight count";
  }
  EXPECT_EQ(Pull(topic, 30).size(), 30u);
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(PubSubSinkIT, DeadLetterQueueRoundTrip) {
  const std::string topic = TopicWithSubscription();
  const std::string dead = TopicWithSubscription();
  auto dlq = PubSubDeadLetterQueue::builder()
                 .topic(TopicDestination::of(kProject, dead))
                 .emulator_endpoint(endpoint_)
                 .build();
  ASSERT_TRUE(dlq.ok()) << dlq.status();
  auto builder = Builder(endpoint_);
  builder
      .serializer(PubSubSerializationSchema<Record>::of(
          [](const Record& r,
             const SinkWriterContext&) -> std::optional<google::pubsub::v1::PubsubMessage> {
            if (r.data == "poison") throw std::runtime_error("cannot encode");
            google::pubsub::v1::PubsubMessage m;
            m.set_data(r.data);
            return m;
          }))
      .failed_message_handler(connector::FailureHandler::send_to_dead_letter_queue(*dlq));
  auto writer = Writer(builder, context_);
  ASSERT_TRUE(writer->write({topic, "fine"}, ctx_).ok());
  ASSERT_TRUE(writer->write({topic, "poison"}, ctx_).ok());
  ASSERT_TRUE(writer->flush(false).ok());
  EXPECT_EQ(Pull(topic, 1).size(), 1u);
  auto letters = Pull(dead, 1);
  ASSERT_EQ(letters.size(), 1u);
  EXPECT_EQ(letters[0].attributes().at("gcpstream.connector"), "pubsub");
  EXPECT_EQ(letters[0].attributes().at("gcpstream.destination"),
            testing::TopicName(kProject, topic));
  EXPECT_EQ(letters[0].attributes().at("gcpstream.status_code"), "INVALID_ARGUMENT");
  EXPECT_THAT(letters[0].attributes().at("gcpstream.error"), HasSubstr("cannot encode"));
  EXPECT_EQ(context_.metric("deadLettersPublished"), 1);
  EXPECT_EQ(context_.metric("numRecordsSendErrors"), 1);
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(PubSubSinkIT, AJobWithCheckpointsDeliversEveryRecord) {
  const std::string topic = TopicWithSubscription();
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  env.enable_checkpointing(200ms);
  auto sink = PubSubSink<std::int64_t>::builder()
                  .topic(TopicDestination::of(kProject, topic))
                  .serializer(PubSubSerializationSchema<std::int64_t>::payload(
                      [](const std::int64_t& v) { return std::to_string(v); }))
                  .emulator_endpoint(endpoint_)
                  .build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  env.from_source(std::make_shared<NumberSequenceSource>(0, 1999, 4),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .sink_to(*sink, "pubsub");
  auto result = env.execute("pubsub-sink-it");
  ASSERT_TRUE(result.status.ok()) << result.status;
  auto messages = Pull(topic, 2000);
  std::set<std::string> distinct;
  for (const auto& m : messages) distinct.insert(m.data());
  EXPECT_EQ(distinct.size(), 2000u) << "received " << messages.size();
  ASSERT_EQ(result.lineage.size(), 1u);
  EXPECT_EQ(result.lineage[0].second.datasets[0].name, "topic:" + topic);
}

// --- through the fault proxy ---

class PubSubSinkFaultIT : public PubSubSinkIT {
 protected:
  void SetUp() override {
    PubSubSinkIT::SetUp();
    auto proxy = testing::FaultProxy::start(endpoint_);
    ASSERT_TRUE(proxy.ok()) << proxy.status();
    proxy_ = std::move(*proxy);
  }
  std::unique_ptr<testing::FaultProxy> proxy_;
};

TEST_F(PubSubSinkFaultIT, ABatchRejectedForOneBadMessageRoutesOnlyThatMessage) {
  const std::string topic = TopicWithSubscription();
  testing::FaultRule whole_batch;
  whole_batch.method = "Publish";
  whole_batch.nth = 1;
  whole_batch.code = absl::StatusCode::kInvalidArgument;
  proxy_->add_rule(whole_batch);
  // The isolation pass republishes the three alone, in publish order: the 2nd is the bad one.
  testing::FaultRule bad_alone = whole_batch;
  bad_alone.nth = 3;
  proxy_->add_rule(bad_alone);
  std::vector<std::string> dropped;
  auto writer = Writer(Builder(proxy_->endpoint())
                           .failed_message_handler(connector::FailureHandler::custom(
                               [&](const connector::FailedElement& e) {
                                 google::pubsub::v1::PubsubMessage m;
                                 m.ParseFromString(e.payload_bytes());
                                 dropped.push_back(m.data());
                                 return absl::OkStatus();
                               })),
                       context_);
  for (const char* d : {"good-1", "bad", "good-2"})
    ASSERT_TRUE(writer->write({topic, d}, ctx_).ok());
  ASSERT_TRUE(writer->flush(false).ok());
  EXPECT_EQ(dropped, (std::vector<std::string>{"bad"}));
  auto messages = Pull(topic, 2);
  std::set<std::string> got;
  for (const auto& m : messages) got.insert(m.data());
  EXPECT_EQ(got, (std::set<std::string>{"good-1", "good-2"}));
  EXPECT_EQ(context_.metric("numRecordsSendErrors"), 1);
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(PubSubSinkFaultIT, TwoWritersRacingToRepairAMissingTopicBothSucceed) {
  const std::string topic = TopicWithSubscription();
  // Both writers' first publishes say NOT_FOUND; both then create the topic (slowed down so the
  // two repairs overlap), one of them or both answered ALREADY_EXISTS, which is success; both
  // republish.
  testing::FaultRule not_found;
  not_found.method = "Publish";
  not_found.times = 2;
  not_found.code = absl::StatusCode::kNotFound;
  proxy_->add_rule(not_found);
  testing::FaultRule slow_create;
  slow_create.method = "CreateTopic";
  slow_create.action = testing::FaultRule::Action::kDelay;
  slow_create.delay = 300ms;
  proxy_->add_rule(slow_create);
  std::latch both_written(2);
  std::vector<double> created(2, -1);
  std::vector<absl::Status> results(2);
  auto run = [&](int i) {
    testing::TestMailbox mailbox;  // bound to this thread, the writer's
    testing::FakeWriterInitContext context(mailbox);
    auto writer = Writer(Builder(proxy_->endpoint()), context);
    results[i] = writer->write({topic, "from-" + std::to_string(i)}, ctx_);
    both_written.arrive_and_wait();
    if (results[i].ok()) results[i] = writer->flush(false);
    created[i] = context.metric("topicsCreated");
    results[i].Update(writer->close());
  };
  std::thread t0(run, 0);
  std::thread t1(run, 1);
  t0.join();
  t1.join();
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(results[i].ok()) << "writer " << i << ": " << results[i];
    EXPECT_EQ(created[i], 1) << "writer " << i;
  }
  EXPECT_EQ(proxy_->calls("CreateTopic"), 2);
  auto messages = Pull(topic, 2);
  std::set<std::string> got;
  for (const auto& m : messages) got.insert(m.data());
  EXPECT_EQ(got, (std::set<std::string>{"from-0", "from-1"}));
}

TEST_F(PubSubSinkFaultIT, AStalledTopicFailsAtThePublishProgressTimeout) {
  const std::string topic = TopicWithSubscription();
  testing::FaultRule hang;
  hang.method = "Publish";
  hang.action = testing::FaultRule::Action::kHang;
  proxy_->add_rule(hang);
  PubSubPublisherOptions options;
  options.publish_progress_timeout = 700ms;
  options.shutdown_timeout = 1s;
  auto writer = Writer(Builder(proxy_->endpoint()).publisher_options(options), context_);
  ASSERT_TRUE(writer->write({topic, "x"}, ctx_).ok());
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = writer->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("publish_progress_timeout"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(PubSubSinkFaultIT, AnOutageNeverReachesADroppingHandler) {
  const std::string topic = TopicWithSubscription();
  testing::FaultRule down;
  down.method = "Publish";
  down.code = absl::StatusCode::kUnavailable;
  proxy_->add_rule(down);
  PubSubPublisherOptions options;
  options.retry_max_attempts = 2;
  options.retry_initial_delay = 10ms;
  int dropped = 0;
  auto writer = Writer(Builder(proxy_->endpoint())
                           .publisher_options(options)
                           .failed_message_handler(connector::FailureHandler::custom(
                               [&](const connector::FailedElement&) {
                                 ++dropped;
                                 return absl::OkStatus();
                               })),
                       context_);
  ASSERT_TRUE(writer->write({topic, "x"}, ctx_).ok());
  absl::Status s = writer->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(dropped, 0);
  EXPECT_EQ(context_.metric("numRecordsSendErrors"), 0);
  EXPECT_EQ(context_.metric("errorClass.UNAVAILABLE.errors"), 1);
  ASSERT_TRUE(writer->close().ok());
}

}  // namespace
}  // namespace gcpstream::pubsub
