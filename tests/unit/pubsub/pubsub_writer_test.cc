// The Pub/Sub sink writer against a fake publisher that completes nothing on its own. Every
// wait is bounded: the writer's publish_progress_timeout is 5 s here, so a broken admission or
// drain predicate fails the test instead of hanging it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "gcpstream/pubsub/admin/resource_names.h"
#include "gcpstream/pubsub/sink/failed_message.h"
#include "gcpstream/pubsub/sink/pubsub_dead_letter_queue.h"
#include "gcpstream/pubsub/sink/pubsub_sink.h"
#include "gcpstream/util/utf8.h"
#include "tests/support/fake_contexts.h"
#include "tests/support/fake_pubsub.h"

namespace gcpstream::pubsub {
namespace {

using namespace std::chrono_literals;
using connector::TopicDestination;
using testing::FakePublisher;
using testing::FakePublisherFactory;
using testing::FakeTopicAdmin;
using ::testing::HasSubstr;

struct Event {
  std::string topic;
  std::string data;
  std::string key;
};

class PubSubWriterTest : public ::testing::Test {
 protected:
  PubSubWriterTest() {
    options_.publish_progress_timeout = 5s;
    options_.recovery.initial_backoff = 1ms;
    options_.recovery.max_backoff = 5ms;
  }

  PubSubSink<Event>::Builder builder() {
    PubSubSinkClients clients;
    clients.publishers = factory_;
    clients.admin_factory = [admin = admin_]() -> absl::StatusOr<std::shared_ptr<TopicAdmin>> {
      return std::shared_ptr<TopicAdmin>(admin);
    };
    auto b = PubSubSink<Event>::builder();
    b.destination_resolver([](const Event& e, const SinkWriterContext&) {
       return std::optional<TopicDestination>(TopicDestination::of("p", e.topic));
     })
        .serializer(
            PubSubSerializationSchema<Event>::of(
                [](const Event& e,
                   const SinkWriterContext&) -> std::optional<google::pubsub::v1::PubsubMessage> {
                  if (e.data == "skip") return std::nullopt;
                  if (e.data == "throw") throw std::runtime_error("cannot encode");
                  google::pubsub::v1::PubsubMessage m;
                  m.set_data(e.data);
                  // "attr:<value>" carries <value> as attribute "a" (for the UTF-8 test).
                  if (e.data.rfind("attr:", 0) == 0)
                    (*m.mutable_attributes())["a"] = e.data.substr(5);
                  return m;
                })
                .with_ordering_key([](const Event& e) { return e.key; }))
        .publisher_options(options_)
        .clients(clients);
    return b;
  }

  std::unique_ptr<SinkWriter<Event>> writer(PubSubSink<Event>::Builder b) {
    auto sink = b.build();
    EXPECT_TRUE(sink.ok()) << sink.status();
    auto w = (*sink)->create_writer(context_);
    EXPECT_TRUE(w.ok()) << w.status();
    return std::move(*w);
  }

  // Completes publishes from another thread after `delay`, as a gRPC thread would.
  std::thread later(std::chrono::milliseconds delay, std::function<void()> fn) {
    return std::thread([delay, fn = std::move(fn)] {
      std::this_thread::sleep_for(delay);
      fn();
    });
  }

  double metric(const std::string& name) { return context_.metric(name); }

  PubSubPublisherOptions options_;
  std::shared_ptr<FakePublisherFactory> factory_ = std::make_shared<FakePublisherFactory>();
  std::shared_ptr<FakeTopicAdmin> admin_ = std::make_shared<FakeTopicAdmin>();
  testing::TestMailbox mailbox_;
  testing::FakeWriterInitContext context_{mailbox_};
  SinkWriterContext ctx_;
};

TEST_F(PubSubWriterTest, ASkippedRecordIsCountedAndNeitherPublishedNorFailed) {
  int handled = 0;
  auto w = writer(builder().failed_message_handler(
      connector::FailureHandler::custom([&](const connector::FailedElement&) {
        ++handled;
        return absl::OkStatus();
      })));
  ASSERT_TRUE(w->write({"topic-1", "skip"}, ctx_).ok());
  EXPECT_EQ(metric("recordsSkipped"), 1);
  EXPECT_EQ(metric("numRecordsSend"), 0);
  EXPECT_EQ(handled, 0);
  EXPECT_EQ(factory_->latest("topic-1"), nullptr) << "the resolver ran, but nothing was published";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(PubSubWriterTest, TheCountCapBackpressuresUntilACompletionArrives) {
  options_.max_in_flight_messages = 3;
  auto w = writer(builder());
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(w->write({"topic-1", "m" + std::to_string(i)}, ctx_).ok());
  auto publisher = factory_->latest("topic-1");
  ASSERT_EQ(publisher->size(), 3u);
  const int flushes_before = publisher->flushes();
  auto completer = later(50ms, [&] { publisher->complete(0, std::string("id")); });
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(w->write({"topic-1", "m3"}, ctx_).ok());
  completer.join();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 40ms) << "the 4th write did not wait";
  EXPECT_GT(publisher->flushes(), flushes_before) << "blocking at the cap sends the batch first";
  EXPECT_EQ(metric("inFlightMessages"), 3);
  publisher->complete_all();
  ASSERT_TRUE(w->flush(false).ok());
  EXPECT_EQ(metric("inFlightMessages"), 0);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(PubSubWriterTest, TheByteCapBindsFarBelowTheCountCapAndAnOversizedMessageIsAdmitted) {
  options_.max_in_flight_messages = 1000;
  options_.max_in_flight_bytes = 100;
  options_.publish_progress_timeout = 200ms;
  auto w = writer(builder());
  ASSERT_TRUE(w->write({"topic-1", std::string(5000, 'x')}, ctx_).ok())
      << "admitted on an empty writer";
  absl::Status s = w->write({"topic-1", "small"}, ctx_);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << "1 message in flight, yet full";
  EXPECT_THAT(std::string(s.message()), HasSubstr("publish_progress_timeout"));
  ASSERT_TRUE(w->close().ok());
}

TEST_F(PubSubWriterTest, FlushWaitsForEveryPublish) {
  auto w = writer(builder());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(w->write({"topic-1", "m"}, ctx_).ok());
  auto publisher = factory_->latest("topic-1");
  auto completer = later(60ms, [&] { publisher->complete_all(); });
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(w->flush(false).ok());
  completer.join();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  EXPECT_EQ(publisher->pending(), 0u);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(PubSubWriterTest, AFailureCapturedInACallbackSurvivesToTheNextCall) {
  auto w = writer(builder());
  ASSERT_TRUE(w->write({"topic-1", "m"}, ctx_).ok());
  auto publisher = factory_->latest("topic-1");
  publisher->complete(0, absl::PermissionDeniedError("no publish permission"));
  ASSERT_TRUE(mailbox_.drain().ok());  // the completion mail runs
  absl::Status s = w->write({"topic-1", "next"}, ctx_);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(s.message()), HasSubstr("projects/p/topics/topic-1"));
  EXPECT_EQ(w->flush(false).code(), absl::StatusCode::kPermissionDenied)
      << "and is still reported at the barrier";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(PubSubWriterTest, IsolationPassRoutesOnlyTheMessageTheServiceRefusesAlone) {
  std::vector<std::string> handled;
  auto w = writer(builder().failed_message_handler(
      connector::FailureHandler::custom([&](const connector::FailedElement& e) {
        google::pubsub::v1::PubsubMessage m;
        EXPECT_TRUE(m.ParseFromString(e.payload_bytes()));
        handled.push_back(m.data());
        return absl::OkStatus();
      })));
  for (const char* d : {"good-1", "bad", "good-2"})
    ASSERT_TRUE(w->write({"topic-1", d}, ctx_).ok());
  auto publisher = factory_->latest("topic-1");
  // The batch was rejected as a whole, every message with the same status.
  for (int i = 0; i < 3; ++i) {
    publisher->complete(i, absl::InvalidArgumentError("invalid attribute in batch"));
  }
  // The writer republishes each alone; the fake answers the solo requests from another thread.
  std::atomic<bool> stop{false};
  std::thread answer([&] {
    std::size_t next = 3;
    while (!stop) {
      if (publisher->size() > next) {
        auto call = publisher->call(next);
        EXPECT_TRUE(call.solo) << "republished in a batch";
        if (call.message.data() == "bad") {
          publisher->complete(next, absl::InvalidArgumentError("bad message"));
        } else {
          publisher->complete(next, std::string("ok"));
        }
        ++next;
      }
      std::this_thread::sleep_for(1ms);
    }
  });
  absl::Status s = w->flush(false);
  stop = true;
  answer.join();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(handled, (std::vector<std::string>{"bad"}));
  EXPECT_EQ(metric("numRecordsSendErrors"), 1);
  EXPECT_EQ(metric("errorClass.INVALID_ARGUMENT.errors"), 1) << "the batch fan-out is not counted";
  EXPECT_EQ(metric("parkedMessages"), 0);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(PubSubWriterTest, AMissingTopicIsCreatedWithTheOptionsAndTheMessagesRepublished) {
  TopicCreateOptions create;
  create.message_retention = std::chrono::hours(24);
  create.kms_key_name = "projects/p/locations/l/keyRings/r/cryptoKeys/k";
  auto w = writer(builder().topic_create_options(create));
  ASSERT_TRUE(w->write({"topic-1", "a"}, ctx_).ok());
  ASSERT_TRUE(w->write({"topic-1", "b"}, ctx_).ok());
  auto publisher = factory_->latest("topic-1");
  publisher->complete(0, absl::NotFoundError("topic not found"));
  publisher->complete(1, absl::NotFoundError("topic not found"));
  std::atomic<bool> stop{false};
  std::thread answer([&] {
    while (!stop) {
      if (publisher->size() > 2) publisher->complete_all();
      std::this_thread::sleep_for(1ms);
    }
  });
  absl::Status s = w->flush(false);
  stop = true;
  answer.join();
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(admin_->created.size(), 1u);
  EXPECT_EQ(admin_->created[0].name(), "projects/p/topics/topic-1");
  EXPECT_EQ(admin_->created[0].message_retention_duration().seconds(), 86400);
  EXPECT_EQ(admin_->created[0].kms_key_name(), create.kms_key_name);
  EXPECT_EQ(publisher->size(), 4u) << "both messages republished";
  EXPECT_EQ(metric("topicsCreated"), 1);
  EXPECT_EQ(metric("errorClass.NOT_FOUND.errors"), 2);
  EXPECT_EQ(metric("numRecordsSend"), 2) << "a republish is not another record";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(PubSubWriterTest, UnderCreateNeverAMissingTopicFailsNamingTheDisposition) {
  auto w = writer(builder().create_disposition(CreateDisposition::kCreateNever));
  ASSERT_TRUE(w->write({"topic-1", "a"}, ctx_).ok());
  factory_->latest("topic-1")->complete(0, absl::NotFoundError("topic not found"));
  absl::Status s = w->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("CREATE_NEVER"));
  EXPECT_TRUE(admin_->created.empty());
  ASSERT_TRUE(w->close().ok());
}

TEST_F(PubSubWriterTest, AnOrderedRepairResumesTheKeyAndRepublishesInPublishOrder) {
  options_.enable_message_ordering = true;
  auto w = writer(builder());
  for (const char* d : {"k-1", "k-2", "k-3"})
    ASSERT_TRUE(w->write({"topic-1", d, "key"}, ctx_).ok());
  auto publisher = factory_->latest("topic-1");
  // The cascades are reported before the failure that caused them.
  publisher->complete(2, OrderingKeyPausedError("key"));
  publisher->complete(1, OrderingKeyPausedError("key"));
  publisher->complete(0, absl::NotFoundError("topic not found"));
  std::atomic<bool> stop{false};
  std::thread answer([&] {
    while (!stop) {
      if (publisher->size() > 3) publisher->complete_all();
      std::this_thread::sleep_for(1ms);
    }
  });
  absl::Status s = w->flush(false);
  stop = true;
  answer.join();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(publisher->resumed(), (std::vector<std::string>{"key"}));
  ASSERT_EQ(publisher->size(), 6u);
  EXPECT_EQ(publisher->call(3).message.data(), "k-1");
  EXPECT_EQ(publisher->call(4).message.data(), "k-2");
  EXPECT_EQ(publisher->call(5).message.data(), "k-3");
  EXPECT_EQ(metric("errorClass.NOT_FOUND.errors"), 1) << "cascades are not root causes";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(PubSubWriterTest, TheActivePublisherCapDrainsBeforeReleasingAndNeverDropsWork) {
  options_.max_active_publishers = 1;
  auto w = writer(builder());
  ASSERT_TRUE(w->write({"topic-1", "a"}, ctx_).ok());
  auto first = factory_->latest("topic-1");
  auto completer = later(50ms, [&] { first->complete_all(); });
  ASSERT_TRUE(w->write({"topic-2", "b"}, ctx_).ok());
  completer.join();
  EXPECT_EQ(first->pending(), 0u) << "t1's publish completed before its publisher was released";
  EXPECT_EQ(first->shutdowns(), 1);
  ASSERT_NE(factory_->latest("topic-2"), nullptr);
  factory_->latest("topic-2")->complete_all();
  ASSERT_TRUE(w->flush(false).ok());
  ASSERT_TRUE(w->close().ok());
}

TEST_F(PubSubWriterTest, AnOrderingKeyWithoutOrderingFailsNamingTheOption) {
  auto w = writer(builder());
  absl::Status s = w->write({"topic-1", "a", "key"}, ctx_);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("enable_message_ordering"));
  ASSERT_TRUE(w->close().ok());
}

TEST_F(PubSubWriterTest, AResolverReturningNothingFailsTheJobInsteadOfRouting) {
  int handled = 0;
  auto b = builder();
  b.destination_resolver([](const Event&, const SinkWriterContext&) {
     return std::optional<TopicDestination>();
   }).failed_message_handler(connector::FailureHandler::custom([&](const auto&) {
    ++handled;
    return absl::OkStatus();
  }));
  auto w = writer(b);
  EXPECT_EQ(w->write({"topic-1", "a"}, ctx_).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(handled, 0);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(PubSubWriterTest, ASerializerThatThrowsIsRoutedButNeverCountsTowardTheRejectionBound) {
  options_.max_consecutive_rejections = 2;
  int handled = 0;
  std::string payload = "x";
  auto w = writer(builder().failed_message_handler(
      connector::FailureHandler::custom([&](const connector::FailedElement& e) {
        ++handled;
        payload = e.payload_bytes();
        EXPECT_FALSE(e.is_service_rejection());
        return absl::OkStatus();
      })));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(w->write({"topic-1", "throw"}, ctx_).ok());
  EXPECT_EQ(handled, 5);
  EXPECT_TRUE(payload.empty()) << "a serializer failure has no message";
  EXPECT_EQ(metric("numRecordsSendErrors"), 5);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(PubSubWriterTest, BuilderRejectsInvalidCombinationsNamingTheOptions) {
  auto missing = PubSubSink<Event>::builder().topic(TopicDestination::of("p", "topic")).build();
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("serializer"));
  auto never = builder()
                   .create_disposition(CreateDisposition::kCreateNever)
                   .topic_create_options(TopicCreateOptions{})
                   .build();
  EXPECT_THAT(std::string(never.status().message()), HasSubstr("topic_create_options"));
  PubSubPublisherOptions ordered;
  ordered.enable_message_ordering = true;
  ordered.retry_total_timeout = 10s;
  auto retry = builder().publisher_options(ordered).build();
  EXPECT_THAT(std::string(retry.status().message()), HasSubstr("retry_total_timeout"));
  auto endpoint = builder().emulator_endpoint("no-port").build();
  EXPECT_EQ(endpoint.status().code(), absl::StatusCode::kInvalidArgument);
  auto both = builder().emulator_endpoint("127.0.0.1:8085").service_account_key_file("/k").build();
  EXPECT_THAT(std::string(both.status().message()), HasSubstr("emulator_endpoint"));
}

TEST_F(PubSubWriterTest, DeadLetterQueueMessagesCarryThePayloadAndWhereItFailed) {
  FailedMessage failed(TopicDestination::of("p", "orders"), std::nullopt,
                       absl::InvalidArgumentError(std::string(5000, 'e')), true);
  auto m = PubSubDeadLetterQueue::ToMessage(failed);
  EXPECT_EQ(m.attributes().at("gcpstream.connector"), "pubsub");
  EXPECT_EQ(m.attributes().at("gcpstream.destination"), "projects/p/topics/orders");
  EXPECT_EQ(m.attributes().at("gcpstream.status_code"), "INVALID_ARGUMENT");
  EXPECT_EQ(m.attributes().at("gcpstream.error").size(), 1024u) << "bounded";
  EXPECT_TRUE(m.data().empty());
}

// Attributes are protobuf strings: an error quoting a record's raw bytes, or cut in the middle
// of a character, made a dead letter the service cannot parse (and the job failed on it).
TEST_F(PubSubWriterTest, DeadLetterAttributesAreValidUtf8WhateverTheErrorQuotes) {
  std::string error = "row '\xff\xfe' refused: ";
  while (error.size() < 1023) error += "\xc3\xa9";  // "é" across the 1024-byte cut
  FailedMessage failed(TopicDestination::of("p", "orders"), std::nullopt,
                       absl::InvalidArgumentError(error), true);
  auto m = PubSubDeadLetterQueue::ToMessage(failed);
  const std::string& attribute = m.attributes().at("gcpstream.error");
  EXPECT_FALSE(util::InvalidUtf8At(attribute).has_value()) << attribute;
  EXPECT_LE(attribute.size(), 1024u);
  EXPECT_THAT(attribute, ::testing::StartsWith("row '\\xff\\xfe' refused: \xc3\xa9"));
}

TEST_F(PubSubWriterTest, AnInvalidTopicIdIsAConfigurationErrorNeverARecordFailure) {
  // `topic: t1` ran under log_and_drop with every record "dropped" and exit 0: the service
  // refuses the name on every request with INVALID_ARGUMENT, which reads like a bad record.
  auto fixed = PubSubSink<Event>::builder()
                   .topic(TopicDestination::of("p", "t1"))
                   .serializer(PubSubSerializationSchema<Event>::of(
                       [](const Event& e, const SinkWriterContext&) {
                         google::pubsub::v1::PubsubMessage m;
                         m.set_data(e.data);
                         return std::optional<google::pubsub::v1::PubsubMessage>(m);
                       }))
                   .build();
  ASSERT_FALSE(fixed.ok());
  EXPECT_EQ(fixed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(fixed.status().message()),
              HasSubstr("'t1' is not a valid Pub/Sub topic"));

  int handled = 0;
  auto w = writer(builder().failed_message_handler(
      connector::FailureHandler::custom([&](const connector::FailedElement&) {
        ++handled;
        return absl::OkStatus();
      })));
  absl::Status s = w->write({"t1", "a"}, ctx_);  // resolved per record
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("projects/p/topics/t1"));
  EXPECT_EQ(handled, 0);
  EXPECT_EQ(factory_->latest("t1"), nullptr) << "no publisher was opened for it";
  ASSERT_TRUE(w->close().ok());

  for (const char* bad : {"ab", "1abc", "goog-topic", "has space", "slash/es", "caf\xc3\xa9"}) {
    EXPECT_FALSE(ValidateResourceId("topic", bad).ok()) << bad;
  }
  for (const std::string& good : {std::string("abc"), std::string("Orders.v2"),
                                  std::string("a-b_c~d+e%f"), std::string(255, 'a')}) {
    EXPECT_TRUE(ValidateResourceId("topic", good).ok()) << good;
  }
  EXPECT_FALSE(ValidateResourceId("topic", std::string(256, 'a')).ok());
}

TEST_F(PubSubWriterTest, ADeadLetterAlwaysFitsInAPublishRequest) {
  google::pubsub::v1::PubsubMessage big;
  big.set_data(std::string(11'000'000, 'x'));
  FailedMessage failed(TopicDestination::of("p", "orders"), big,
                       absl::InvalidArgumentError("too large"), true);
  auto m = PubSubDeadLetterQueue::ToMessage(failed);
  EXPECT_TRUE(m.data().empty()) << "an 11 MB payload cannot ride in a 10 MB request";
  EXPECT_EQ(m.attributes().at("gcpstream.payload_omitted_bytes"),
            std::to_string(big.ByteSizeLong()));
  EXPECT_LT(m.ByteSizeLong(), 10'000'000u);

  google::pubsub::v1::PubsubMessage small;
  small.set_data("fits");
  auto kept = PubSubDeadLetterQueue::ToMessage(FailedMessage(
      TopicDestination::of("p", "orders"), small, absl::InvalidArgumentError("bad"), true));
  EXPECT_EQ(kept.data(), small.SerializeAsString());
  EXPECT_EQ(kept.attributes().count("gcpstream.payload_omitted_bytes"), 0u);
}

TEST_F(PubSubWriterTest, AMessageThatCannotFitInAPublishRequestIsARecordFailureNotAnOutage) {
  // The emulator answers an over-sized publish with RESOURCE_EXHAUSTED, which the sink would
  // retry as an outage forever; the limit is known, so the record is refused before any RPC.
  int handled = 0;
  absl::StatusCode code = absl::StatusCode::kOk;
  auto w = writer(builder().failed_message_handler(
      connector::FailureHandler::custom([&](const connector::FailedElement& e) {
        ++handled;
        code = e.status().code();
        return absl::OkStatus();
      })));
  ASSERT_TRUE(w->write({"topic-1", std::string(12'000'000, 'x')}, ctx_).ok());
  EXPECT_EQ(handled, 1);
  EXPECT_EQ(code, absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(factory_->latest("topic-1"), nullptr) << "nothing was published";
  ASSERT_TRUE(w->write({"topic-1", std::string(9'000'000, 'x')}, ctx_).ok()) << "under the limit";
  ASSERT_NE(factory_->latest("topic-1"), nullptr);
  EXPECT_EQ(factory_->latest("topic-1")->size(), 1u);
  factory_->latest("topic-1")->complete_all();
  ASSERT_TRUE(w->flush(false).ok());
  ASSERT_TRUE(w->close().ok());
}

// Attributes are protobuf strings: a value that is not UTF-8 made a request the service could
// not parse. It fails alone, as a record, before any RPC.
TEST_F(PubSubWriterTest, AnAttributeThatIsNotUtf8IsARecordFailureBeforeAnyRpc) {
  int handled = 0;
  std::string message;
  auto w = writer(builder().failed_message_handler(
      connector::FailureHandler::custom([&](const connector::FailedElement& e) {
        ++handled;
        message = std::string(e.status().message());
        EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
        return absl::OkStatus();
      })));
  ASSERT_TRUE(w->write({"topic-1", "attr:ok\xff"}, ctx_).ok());
  EXPECT_EQ(handled, 1);
  EXPECT_THAT(message, HasSubstr("the value of attribute 'a' that is not valid UTF-8 (byte 2)"));
  EXPECT_EQ(factory_->latest("topic-1"), nullptr) << "nothing was published";
  ASSERT_TRUE(w->write({"topic-1", "attr:caf\xc3\xa9"}, ctx_).ok()) << "valid UTF-8";
  ASSERT_NE(factory_->latest("topic-1"), nullptr);
  EXPECT_EQ(factory_->latest("topic-1")->size(), 1u);
  factory_->latest("topic-1")->complete_all();
  ASSERT_TRUE(w->flush(false).ok());
  ASSERT_TRUE(w->close().ok());
}

TEST_F(PubSubWriterTest, DeadLetterQueueFlushWaitsAndExpiresNamingFlushTimeout) {
  auto dlq_factory = std::make_shared<FakePublisherFactory>();
  auto dlq = PubSubDeadLetterQueue::builder()
                 .topic(TopicDestination::of("p", "dead"))
                 .flush_timeout(100ms)
                 .publisher_factory(dlq_factory)
                 .build();
  ASSERT_TRUE(dlq.ok()) << dlq.status();
  connector::DeadLetterQueueContext ctx;
  ctx.mailbox_executor = &mailbox_.executor();
  ctx.metric_group = &context_.metric_group();
  ASSERT_TRUE((*dlq)->open(ctx).ok());
  FailedMessage failed(TopicDestination::of("p", "orders"), std::nullopt,
                       absl::InvalidArgumentError("bad"), true);
  ASSERT_TRUE((*dlq)->offer(failed).ok());
  absl::Status s = (*dlq)->flush();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(s.message()), HasSubstr("flush_timeout"));
  auto publisher = dlq_factory->latest("dead");
  auto completer = later(20ms, [&] { publisher->complete_all(); });
  ASSERT_TRUE((*dlq)->flush().ok());
  completer.join();
  EXPECT_EQ(metric("deadLettersPublished"), 1);
  EXPECT_GE(metric("longestDeadLetterFlushMillis"), 100);
  ASSERT_TRUE((*dlq)->close().ok());
}

}  // namespace
}  // namespace gcpstream::pubsub
