#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/connector/failure_router.h"
#include "gcpstream/runtime/metric_registry.h"

namespace gcpstream::connector {
namespace {

using ::testing::HasSubstr;

BasicFailedElement Rejected(absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  return BasicFailedElement("pubsub", "projects/p/topics/t", "payload",
                            absl::Status(code, "bad attribute"));
}

double Metric(runtime::MetricRegistry& r, const std::string& name) {
  for (const auto& s : r.snapshot()) {
    if (s.name == name) return s.value;
  }
  return -1;
}

TEST(FailureRouterTest, CountsSendErrorsImmediatelyBeforeTheHandlerRuns) {
  runtime::MetricRegistry registry;
  auto& group = registry.group({{"t", "w"}});
  std::int64_t seen_by_handler = -1;
  auto handler = FailureHandler::custom([&](const FailedElement&) {
    seen_by_handler = group.counter("numRecordsSendErrors").get();
    return absl::OkStatus();
  });
  FailureRouter router("pubsub", handler, 100, group);
  ASSERT_TRUE(router.route_rejection(Rejected()).ok());
  EXPECT_EQ(seen_by_handler, 1);
  EXPECT_EQ(Metric(registry, "errorClass.INVALID_ARGUMENT.errors"), 1);
}

TEST(FailureRouterTest, FailJobIsTheDefaultAndKeepsTheCode) {
  runtime::MetricRegistry registry;
  FailureRouter router("bigtable", nullptr, 100, registry.group({{"t", "w"}}));
  absl::Status s = router.route_rejection(Rejected());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("fail_job"));
}

TEST(MaxConsecutiveRejectionsTest, TripsAtTheBoundNamingOptionCountAndLastStatus) {
  runtime::MetricRegistry registry;
  FailureRouter router("pubsub", FailureHandler::log_and_drop(), 3, registry.group({{"t", "w"}}));
  ASSERT_TRUE(router.route_rejection(Rejected()).ok());
  ASSERT_TRUE(router.route_rejection(Rejected()).ok());
  absl::Status s = router.route_rejection(Rejected());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("max_consecutive_rejections (3)"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("3 confirmed rejections"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("bad attribute"));
  EXPECT_EQ(Metric(registry, "numRecordsSendErrors"), 3) << "the tripping one was routed too";
}

TEST(MaxConsecutiveRejectionsTest, AnySuccessResetsAndSerializerFailuresNeverCount) {
  runtime::MetricRegistry registry;
  FailureRouter router("pubsub", FailureHandler::log_and_drop(), 2, registry.group({{"t", "w"}}));
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(router.route_rejection(Rejected()).ok());
    router.on_success();
  }
  BasicFailedElement serializer_failure("pubsub", "projects/p/topics/t", "",
                                        absl::InvalidArgumentError("threw"), false);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(router.route_serialization_failure(serializer_failure).ok());
  }
  ASSERT_TRUE(router.route_rejection(Rejected()).ok()) << "one rejection after the reset";
}

TEST(MaxConsecutiveRejectionsTest, MinusOneDisablesTheBound) {
  MaxConsecutiveRejections bound(MaxConsecutiveRejections::kDisabled, "bigtable");
  for (int i = 0; i < 10000; ++i) {
    ASSERT_TRUE(bound.on_rejection(absl::InvalidArgumentError("x")).ok());
  }
}

// A dead-letter queue that records its lifecycle.
class RecordingQueue final : public DeadLetterQueue {
 public:
  absl::Status open(const DeadLetterQueueContext& c) override {
    events.push_back("open " + std::to_string(c.subtask_index));
    return absl::OkStatus();
  }
  absl::Status offer(const FailedElement& e) override {
    events.push_back("offer " + e.payload_bytes());
    return absl::OkStatus();
  }
  absl::Status flush() override {
    events.push_back("flush");
    return absl::OkStatus();
  }
  absl::Status close() override {
    events.push_back("close");
    return absl::OkStatus();
  }
  std::vector<std::string> events;
};

TEST(FailureHandlerTest, DeadLetterQueueHandlerDrivesTheQueueLifecycle) {
  auto queue = std::make_shared<RecordingQueue>();
  auto handler = FailureHandler::send_to_dead_letter_queue(queue);
  DeadLetterQueueContext context;
  context.subtask_index = 2;
  ASSERT_TRUE(handler->open(context).ok());
  ASSERT_TRUE(handler->handle(Rejected()).ok());
  ASSERT_TRUE(handler->flush().ok());
  ASSERT_TRUE(handler->close().ok());
  EXPECT_EQ(queue->events,
            (std::vector<std::string>{"open 2", "offer payload", "flush", "close"}));
}

struct FailedThing final : BasicFailedElement {
  using BasicFailedElement::BasicFailedElement;
  int extra = 7;
};

TEST(FailureHandlerTest, TypedHandlersSeeTheirConnectorsElement) {
  int seen = 0;
  auto handler = FailureHandler::custom_typed<FailedThing>([&](const FailedThing& t) {
    seen = t.extra;
    return absl::OkStatus();
  });
  FailedThing thing("x", "d", "", absl::InvalidArgumentError("e"));
  ASSERT_TRUE(handler->handle(thing).ok());
  EXPECT_EQ(seen, 7);
  EXPECT_FALSE(handler->handle(Rejected()).ok()) << "another connector's element";
}

}  // namespace
}  // namespace gcpstream::connector
