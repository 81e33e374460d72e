// The Cloud Tasks sink writer over a fake stub: builder validation, naming and deduplication,
// the failure classes of docs/cloud-tasks.md, metrics, and the two target conveniences.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "gcpstream/tasks/admin/resource_names.h"
#include "gcpstream/tasks/sink/cloud_tasks_sink.h"
#include "tests/support/fake_cloud_tasks.h"
#include "tests/support/fake_contexts.h"

namespace gcpstream::tasks {
namespace {

using namespace std::chrono_literals;
using connector::QueueDestination;
using ::testing::HasSubstr;
using Task = google::cloud::tasks::v2::Task;

struct Order {
  std::string id;
  std::string body = "{}";
  std::string url = "https://example.com/orders";
};

const QueueDestination kQueue = QueueDestination::of("p", "us-central1", "orders");
const std::string kQueueName = kQueue.resource_name();

// Records what reaches a failure handler.
struct Recorded {
  std::mutex mu;
  std::vector<std::string> payloads;
  std::vector<absl::StatusCode> codes;
};

class CloudTasksWriterTest : public ::testing::Test {
 protected:
  CloudTasksWriterTest() {
    options_.retry_initial_backoff = 1ms;
    options_.retry_max_backoff = 2ms;
    options_.not_found_initial_backoff = 1ms;
    options_.not_found_max_backoff = 2ms;
  }

  CloudTasksSink<Order>::Builder builder() {
    auto schema = http_target<Order>("https://example.com/orders")
                      .with_body([](const Order& o) { return o.body; })
                      .with_url([](const Order& o) { return o.url; })
                      .build();
    EXPECT_TRUE(schema.ok()) << schema.status();
    auto b = CloudTasksSink<Order>::builder();
    b.queue(kQueue).serializer(*schema).writer_options(options_).stub(stub_).uniform01(
        [] { return 0.5; });
    return b;
  }
  std::unique_ptr<SinkWriter<Order>> writer(CloudTasksSink<Order>::Builder b) {
    auto sink = b.build();
    EXPECT_TRUE(sink.ok()) << sink.status();
    auto w = (*sink)->create_writer(context_);
    EXPECT_TRUE(w.ok()) << w.status();
    return std::move(*w);
  }
  std::shared_ptr<connector::FailureHandler> recording() {
    return connector::FailureHandler::custom([r = recorded_](const connector::FailedElement& e) {
      std::lock_guard lock(r->mu);
      r->payloads.push_back(e.payload_bytes());
      r->codes.push_back(e.status().code());
      return absl::OkStatus();
    });
  }
  void answer_all(absl::Status status) {
    stub_->on_create = [status](std::size_t, const auto&) -> std::optional<absl::Status> {
      return status;
    };
  }

  CloudTasksWriterOptions options_;
  std::shared_ptr<testing::FakeCloudTasksStub> stub_ =
      std::make_shared<testing::FakeCloudTasksStub>();
  testing::TestMailbox mailbox_;
  testing::FakeWriterInitContext context_{mailbox_};
  SinkWriterContext ctx_;
  std::shared_ptr<Recorded> recorded_ = std::make_shared<Recorded>();
};

TEST_F(CloudTasksWriterTest, TheBuilderNamesTheOptionOfTheFirstProblem) {
  auto schema = http_target<Order>("https://x").with_body([](const Order&) { return ""; });
  auto no_queue = CloudTasksSink<Order>::builder().serializer(*schema.build()).build();
  EXPECT_THAT(std::string(no_queue.status().message()), HasSubstr("queue(...)"));
  auto no_serializer = CloudTasksSink<Order>::builder().queue(kQueue).build();
  EXPECT_THAT(std::string(no_serializer.status().message()), HasSubstr("serializer(...)"));
  auto bad_queue = CloudTasksSink<Order>::builder()
                       .queue(QueueDestination::of("p", "l", "bad_queue"))
                       .serializer(*schema.build())
                       .build();
  EXPECT_THAT(std::string(bad_queue.status().message()), HasSubstr("queue id 'bad_queue'"));
  CloudTasksWriterOptions pool;
  pool.channel_pool_size = 4;
  auto pooled = CloudTasksSink<Order>::builder()
                    .queue(kQueue)
                    .serializer(*schema.build())
                    .writer_options(pool)
                    .emulator_endpoint("127.0.0.1:8123")
                    .build();
  EXPECT_THAT(std::string(pooled.status().message()), HasSubstr("channel_pool_size"));
  auto bad_endpoint = CloudTasksSink<Order>::builder()
                          .queue(kQueue)
                          .serializer(*schema.build())
                          .emulator_endpoint("no-port")
                          .build();
  EXPECT_EQ(bad_endpoint.status().code(), absl::StatusCode::kInvalidArgument);
  for (auto [set, option] :
       std::vector<std::pair<std::function<void(CloudTasksWriterOptions&)>, std::string>>{
           {[](auto& o) { o.max_in_flight_tasks = 0; }, "max_in_flight_tasks"},
           {[](auto& o) { o.retry_max_attempts = 0; }, "retry_max_attempts"},
           {[](auto& o) { o.retry_max_backoff = 1ms; }, "retry_max_backoff"},
           {[](auto& o) { o.not_found_initial_backoff = 0ms; }, "not_found_initial_backoff"},
           {[](auto& o) { o.not_found_max_attempts = 0; }, "not_found_max_attempts"},
           {[](auto& o) { o.channel_pool_size = 0; }, "channel_pool_size"},
       }) {
    CloudTasksWriterOptions o;
    set(o);
    absl::Status s = o.validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << option;
    EXPECT_THAT(std::string(s.message()), HasSubstr(option));
  }
}

TEST_F(CloudTasksWriterTest, TheDefaultsAreTheReferences) {
  CloudTasksWriterOptions o;
  EXPECT_EQ(o.max_in_flight_tasks, 1000);
  EXPECT_FALSE(o.channel_pool_size.has_value());
  EXPECT_EQ(o.retry_initial_backoff, 100ms);
  EXPECT_EQ(o.retry_max_backoff, 10s);
  EXPECT_EQ(o.retry_max_attempts, 8);
  EXPECT_EQ(o.not_found_initial_backoff, 500ms);
  EXPECT_EQ(o.not_found_max_backoff, 2s);
  EXPECT_EQ(o.not_found_max_attempts, 3);
  EXPECT_FALSE(o.per_destination_metrics);
  // RecoveryBackoff counts the delays between attempts.
  EXPECT_EQ(o.retry_settings().transient.max_attempts, 7);
  EXPECT_EQ(o.retry_settings().not_found.max_attempts, 2);
  EXPECT_EQ(o.retry_settings().attempt_timeout, 20s);
}

TEST_F(CloudTasksWriterTest, TaskIdExtractorNamesEachTaskBySha256WithinItsQueue) {
  answer_all(absl::OkStatus());
  auto w = writer(builder().task_id_extractor([](const Order& o) { return o.id; }));
  ASSERT_TRUE(w->write(Order{"order-1"}, ctx_).ok());
  ASSERT_TRUE(w->flush(false).ok());
  ASSERT_EQ(stub_->size(kQueueName), 1u);
  EXPECT_EQ(stub_->call(kQueueName, 0).request.task().name(), TaskName(kQueue, "order-1"));
  EXPECT_EQ(stub_->call(kQueueName, 0).request.parent(), kQueueName);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, WithoutAnExtractorTasksAreUnnamed) {
  answer_all(absl::OkStatus());
  auto w = writer(builder());
  ASSERT_TRUE(w->write(Order{"order-1"}, ctx_).ok());
  ASSERT_TRUE(w->flush(false).ok());
  EXPECT_EQ(stub_->call(kQueueName, 0).request.task().name(), "");
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, AReplayedNamedTaskIsCountedAsDeduplicatedNeverAsAFailure) {
  answer_all(absl::AlreadyExistsError("Requested entity already exists"));
  auto w = writer(builder()
                      .task_id_extractor([](const Order& o) { return o.id; })
                      .failed_task_handler(recording()));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(w->write(Order{"order-" + std::to_string(i)}, ctx_).ok());
  ASSERT_TRUE(w->flush(false).ok());
  EXPECT_EQ(context_.metric("tasksDeduplicated"), 3);
  EXPECT_EQ(context_.metric("numRecordsSend"), 3);
  EXPECT_EQ(context_.metric("numRecordsSendErrors"), 0);
  EXPECT_LE(context_.metric("errorClass.ALREADY_EXISTS.errors"), 0) << "absent (-1) or zero";
  EXPECT_EQ(stub_->size(kQueueName), 3u) << "never retried";
  EXPECT_TRUE(recorded_->codes.empty());
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, AlreadyExistsForAnUnnamedTaskFailsTheJob) {
  answer_all(absl::AlreadyExistsError("exists"));
  auto w = writer(builder().failed_task_handler(recording()));
  ASSERT_TRUE(w->write(Order{"a"}, ctx_).ok());
  absl::Status s = w->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("unnamed task"));
  EXPECT_TRUE(recorded_->codes.empty());
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, AMissingQueueFailsAfterTheShortNotFoundBudgetNamingTheQueue) {
  options_.not_found_max_attempts = 2;
  answer_all(absl::NotFoundError("Queue does not exist."));
  auto w = writer(builder().failed_task_handler(recording()));
  ASSERT_TRUE(w->write(Order{"a"}, ctx_).ok());
  absl::Status s = w->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(kQueueName));
  EXPECT_THAT(std::string(s.message()), HasSubstr("never creates queues"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("not_found_max_attempts is 2"));
  EXPECT_EQ(stub_->size(kQueueName), 2u);
  EXPECT_EQ(context_.metric("errorClass.NOT_FOUND.errors"), 2) << "every attempt is counted";
  EXPECT_TRUE(recorded_->codes.empty()) << "a missing queue is never a record failure";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, TransientFailuresAreRetriedAndEveryAttemptIsCountedByCode) {
  stub_->on_create = [](std::size_t i, const auto&) -> std::optional<absl::Status> {
    if (i < 2) return absl::UnavailableError("down");
    return absl::OkStatus();
  };
  auto w = writer(builder());
  ASSERT_TRUE(w->write(Order{"a"}, ctx_).ok());
  ASSERT_TRUE(w->flush(false).ok());
  EXPECT_EQ(stub_->size(kQueueName), 3u);
  EXPECT_EQ(context_.metric("errorClass.UNAVAILABLE.errors"), 2);
  EXPECT_EQ(context_.metric("numRecordsSend"), 1) << "records, not attempts";
  EXPECT_EQ(context_.metric("inFlightTasks"), 0);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, AnExhaustedTransientBudgetFailsTheJobAndIsNeverRouted) {
  options_.retry_max_attempts = 3;
  answer_all(absl::ResourceExhaustedError("quota"));
  auto w = writer(builder().failed_task_handler(recording()));
  ASSERT_TRUE(w->write(Order{"a"}, ctx_).ok());
  absl::Status s = w->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("retry_max_attempts is 3"));
  EXPECT_EQ(stub_->size(kQueueName), 3u);
  EXPECT_TRUE(recorded_->codes.empty());
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, PermissionDeniedFailsTheJobAtOnce) {
  answer_all(absl::PermissionDeniedError("denied"));
  auto w = writer(builder().failed_task_handler(recording()));
  ASSERT_TRUE(w->write(Order{"a"}, ctx_).ok());
  EXPECT_EQ(w->flush(false).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(stub_->size(kQueueName), 1u);
  EXPECT_TRUE(recorded_->codes.empty());
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, AnInvalidTaskIsRoutedWithTheWholeTaskAsPayload) {
  answer_all(absl::InvalidArgumentError("Task size too large"));
  auto w = writer(builder().failed_task_handler(recording()));
  ASSERT_TRUE(w->write(Order{"a", "big", "https://example.com/x"}, ctx_).ok());
  ASSERT_TRUE(w->flush(false).ok());
  ASSERT_EQ(recorded_->payloads.size(), 1u);
  Task routed;
  ASSERT_TRUE(routed.ParseFromString(recorded_->payloads[0]));
  EXPECT_EQ(routed.http_request().url(), "https://example.com/x");
  EXPECT_EQ(routed.http_request().body(), "big");
  EXPECT_EQ(stub_->size(kQueueName), 1u) << "one task per request: no isolation resend";
  EXPECT_EQ(context_.metric("numRecordsSendErrors"), 1);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, ARefusedTaskIsRoutedAtTheNextRecordWithoutWaitingForOthers) {
  stub_->on_create = [](std::size_t, const auto& c) -> std::optional<absl::Status> {
    if (c.request.task().http_request().body() == "bad") return absl::InvalidArgumentError("no");
    return std::nullopt;  // "slow" stays in flight
  };
  auto w = writer(builder().failed_task_handler(recording()));
  ASSERT_TRUE(w->write(Order{"1", "slow"}, ctx_).ok());
  ASSERT_TRUE(w->write(Order{"2", "bad"}, ctx_).ok());
  ASSERT_TRUE(mailbox_.drain().ok());  // the refusal's completion
  ASSERT_TRUE(w->write(Order{"3", "next"}, ctx_).ok());
  EXPECT_EQ(recorded_->codes.size(), 1u) << "routed while another create is still in flight";
  EXPECT_EQ(stub_->pending(kQueueName), 2u);
  EXPECT_EQ(context_.metric("parkedTasks"), 0);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, ATaskOverOneMebibyteIsRoutedBeforeAnyRpc) {
  answer_all(absl::OkStatus());
  auto w = writer(builder().failed_task_handler(recording()));
  ASSERT_TRUE(w->write(Order{"a", std::string(1024 * 1024 + 1, 'x')}, ctx_).ok());
  ASSERT_TRUE(w->write(Order{"b", std::string(200 * 1024, 'x')}, ctx_).ok());
  ASSERT_TRUE(w->flush(false).ok());
  EXPECT_EQ(recorded_->codes, std::vector{absl::StatusCode::kInvalidArgument});
  EXPECT_EQ(stub_->size(kQueueName), 1u)
      << "between 100 KB and 1 MiB the documents disagree: the service decides";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, ASerializerReturningANamedTaskFailsTheJobEvenUnderADroppingHandler) {
  auto b = builder();
  b.serializer(CloudTasksSerializationSchema<Order>::of([](const Order&, const SinkWriterContext&)
                                                            -> std::optional<Task> {
     Task t;
     t.set_name(kQueueName + "/tasks/mine");
     t.mutable_http_request()->set_url("https://example.com/");
     return t;
   })).failed_task_handler(connector::FailureHandler::log_and_drop());
  auto w = writer(std::move(b));
  absl::Status s = w->write(Order{"a"}, ctx_);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("task_id_extractor"));
  EXPECT_EQ(stub_->size(kQueueName), 0u);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, AnEmptyKeyFailsTheJobAndAThrowingExtractorIsRouted) {
  answer_all(absl::OkStatus());
  auto w = writer(builder()
                      .task_id_extractor([](const Order& o) {
                        if (o.id == "throw") throw std::runtime_error("no id field");
                        return o.id;
                      })
                      .failed_task_handler(recording()));
  ASSERT_TRUE(w->write(Order{"throw"}, ctx_).ok()) << "a throw fails that record only";
  ASSERT_EQ(recorded_->codes.size(), 1u);
  EXPECT_EQ(recorded_->payloads[0], "") << "nothing was built to send";
  absl::Status s = w->write(Order{""}, ctx_);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("empty key"));
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, ATaskWithoutATargetOrWithNonUtf8HeadersIsRoutedBeforeAnyRpc) {
  auto b = builder();
  b.serializer(CloudTasksSerializationSchema<Order>::of([](const Order& o, const SinkWriterContext&)
                                                            -> std::optional<Task> {
     Task t;
     if (o.id == "headers") {
       t.mutable_http_request()->set_url("https://example.com/");
       (*t.mutable_http_request()->mutable_headers())["X-Bad"] = std::string("\xff\xfe");
     }
     return t;
   })).failed_task_handler(recording());
  auto w = writer(std::move(b));
  ASSERT_TRUE(w->write(Order{"none"}, ctx_).ok());
  ASSERT_TRUE(w->write(Order{"headers"}, ctx_).ok());
  ASSERT_TRUE(w->flush(false).ok());
  EXPECT_EQ(recorded_->codes,
            (std::vector{absl::StatusCode::kInvalidArgument, absl::StatusCode::kInvalidArgument}));
  EXPECT_EQ(stub_->size(kQueueName), 0u);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, HeadersThatWouldSplitTheRequestAreRoutedBeforeAnyRpc) {
  auto b = builder();
  b.serializer(CloudTasksSerializationSchema<Order>::of([](const Order& o, const SinkWriterContext&)
                                                            -> std::optional<Task> {
     Task t;
     t.mutable_http_request()->set_url("https://example.com/");
     (*t.mutable_http_request()->mutable_headers())[o.id] = o.body;
     return t;
   })).failed_task_handler(recording());
  answer_all(absl::OkStatus());
  auto w = writer(std::move(b));
  ASSERT_TRUE(w->write(Order{"X-Ok", "fine"}, ctx_).ok());
  ASSERT_TRUE(w->write(Order{"X-A", "v\r\nInjected: 1"}, ctx_).ok());
  ASSERT_TRUE(w->write(Order{"X-B", std::string("a\0b", 3)}, ctx_).ok());
  ASSERT_TRUE(w->write(Order{"a b:c", "v"}, ctx_).ok());
  ASSERT_TRUE(w->write(Order{"", "v"}, ctx_).ok());
  ASSERT_TRUE(w->flush(false).ok());
  EXPECT_EQ(recorded_->codes.size(), 4u);
  EXPECT_EQ(stub_->size(kQueueName), 1u) << "only the valid header was sent";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, ParkedTasksCountsCreatesWaitingOutABackoff) {
  options_.retry_initial_backoff = 10s;
  options_.retry_max_backoff = 10s;
  stub_->on_create = [](std::size_t i, const auto&) -> std::optional<absl::Status> {
    if (i == 0) return absl::UnavailableError("down");
    return std::nullopt;
  };
  auto w = writer(builder());
  ASSERT_TRUE(w->write(Order{"a"}, ctx_).ok());
  ASSERT_TRUE(w->write(Order{"b"}, ctx_).ok());
  EXPECT_EQ(context_.metric("parkedTasks"), 1);
  EXPECT_EQ(context_.metric("inFlightTasks"), 1) << "the other one: not answered yet";
  EXPECT_GT(context_.metric("inFlightBytes"), 0);
  ASSERT_TRUE(w->close().ok()) << "close drops parked creates (the restart replays them)";
  EXPECT_EQ(context_.metric("parkedTasks"), 0);
}

TEST_F(CloudTasksWriterTest, PerDestinationMetricsCountPerQueue) {
  options_.per_destination_metrics = true;
  answer_all(absl::OkStatus());
  auto w = writer(builder());
  ASSERT_TRUE(w->write(Order{"a"}, ctx_).ok());
  ASSERT_TRUE(w->flush(false).ok());
  EXPECT_EQ(context_.metric("destination.orders.recordsSend"), 1);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, OneClientServesEveryQueueOfAResolver) {
  answer_all(absl::OkStatus());
  auto b = builder();
  b.destination_resolver([](const Order& o, const SinkWriterContext&) {
    return std::optional<QueueDestination>(QueueDestination::of("p", "us-central1", o.id));
  });
  auto w = writer(std::move(b));
  for (const char* q : {"qa", "qb", "qc"}) ASSERT_TRUE(w->write(Order{q}, ctx_).ok());
  ASSERT_TRUE(w->flush(false).ok());
  EXPECT_EQ(stub_->queues().size(), 3u);
  EXPECT_EQ(context_.metric("numRecordsSend"), 3);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(CloudTasksWriterTest, AResolverReturningAnInvalidQueueFailsTheJobNamingIt) {
  auto b = builder();
  b.destination_resolver([](const Order&, const SinkWriterContext&) {
     return std::optional<QueueDestination>(QueueDestination::of("p", "l", "no_underscores"));
   }).failed_task_handler(connector::FailureHandler::log_and_drop());
  auto w = writer(std::move(b));
  absl::Status s = w->write(Order{"a"}, ctx_);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("no_underscores"));
  ASSERT_TRUE(w->close().ok());
}

// --- the target conveniences (the v2 HttpRequest and AppEngineHttpRequest references) ---

SinkWriterContext Ctx() { return {}; }

TEST(CloudTasksTargetsTest, HttpTargetBuildsTheRequestAndSendsABodyOnlyUnderBodyMethods) {
  auto post = http_target<Order>("https://example.com/o")
                  .with_body([](const Order& o) { return o.body; })
                  .with_headers([](const Order& o) {
                    return std::map<std::string, std::string>{{"X-Id", o.id}};
                  })
                  .with_oidc_token("sa@p.iam.gserviceaccount.com", "https://aud")
                  .with_dispatch_deadline(60s)
                  .with_schedule_time([](const Order&) {
                    return std::optional<absl::Time>(absl::FromUnixSeconds(2'000'000'000));
                  })
                  .build();
  ASSERT_TRUE(post.ok()) << post.status();
  auto t = post->serialize(Order{"7", "payload"}, Ctx());
  ASSERT_TRUE(t.ok() && t->has_value());
  const auto& h = (*t)->http_request();
  EXPECT_EQ(h.url(), "https://example.com/o");
  EXPECT_EQ(h.http_method(), google::cloud::tasks::v2::POST);
  EXPECT_EQ(h.body(), "payload");
  EXPECT_EQ(h.headers().at("X-Id"), "7");
  EXPECT_EQ(h.oidc_token().service_account_email(), "sa@p.iam.gserviceaccount.com");
  EXPECT_EQ(h.oidc_token().audience(), "https://aud");
  EXPECT_EQ((*t)->dispatch_deadline().seconds(), 60);
  EXPECT_EQ((*t)->schedule_time().seconds(), 2'000'000'000);
  EXPECT_TRUE((*t)->name().empty());

  auto get = http_target<Order>("https://example.com/o")
                 .with_body([](const Order& o) { return o.body; })
                 .with_method(google::cloud::tasks::v2::GET)
                 .build();
  auto g = get->serialize(Order{"7", "payload"}, Ctx());
  EXPECT_EQ((*g)->http_request().body(), "") << "GET carries no body";
  auto patch = http_target<Order>("https://example.com/o")
                   .with_body([](const Order& o) { return o.body; })
                   .with_method(google::cloud::tasks::v2::PATCH)
                   .build();
  EXPECT_EQ((*patch->serialize(Order{"7", "p"}, Ctx()))->http_request().body(), "p");
}

TEST(CloudTasksTargetsTest, HttpTargetRefusesWhatTheServiceRefuses) {
  auto body = [](const Order& o) { return o.body; };
  EXPECT_THAT(std::string(http_target<Order>("https://x").build().status().message()),
              HasSubstr("with_body"));
  EXPECT_FALSE(http_target<Order>("ftp://x").with_body(body).build().ok());
  EXPECT_FALSE(
      http_target<Order>("https://x/" + std::string(2100, 'a')).with_body(body).build().ok());
  auto both = http_target<Order>("https://x")
                  .with_body(body)
                  .with_oidc_token("a@b")
                  .with_oauth_token("a@b")
                  .build();
  EXPECT_THAT(std::string(both.status().message()), HasSubstr("cannot both be set"));
  EXPECT_FALSE(
      http_target<Order>("https://x").with_body(body).with_dispatch_deadline(10s).build().ok());
  EXPECT_FALSE(
      http_target<Order>("https://x").with_body(body).with_dispatch_deadline(31min).build().ok());
  // A per-record URL the service would refuse fails that record (a serialization failure).
  auto per_record = http_target<Order>("https://x")
                        .with_body(body)
                        .with_url([](const Order& o) { return o.url; })
                        .build();
  auto bad = per_record->serialize(Order{"1", "b", "not a url"}, Ctx());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CloudTasksTargetsTest, AppEngineTargetBuildsRoutingAndRefusesReservedHeaders) {
  auto schema = app_engine_target<Order>("/orders")
                    .with_body([](const Order& o) { return o.body; })
                    .with_routing(AppEngineRoute{"worker", "v2", ""})
                    .with_headers([](const Order& o) {
                      return std::map<std::string, std::string>{{o.id, "1"}};
                    })
                    .build();
  ASSERT_TRUE(schema.ok()) << schema.status();
  auto t = schema->serialize(Order{"X-Custom", "b"}, Ctx());
  ASSERT_TRUE(t.ok()) << t.status();
  const auto& a = (*t)->app_engine_http_request();
  EXPECT_EQ(a.relative_uri(), "/orders");
  EXPECT_EQ(a.body(), "b");
  EXPECT_EQ(a.app_engine_routing().service(), "worker");
  EXPECT_EQ(a.app_engine_routing().version(), "v2");
  for (const char* reserved : {"Host", "content-length", "X-Google-Foo", "X-AppEngine-Country"}) {
    auto r = schema->serialize(Order{reserved, "b"}, Ctx());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << reserved;
  }
  // PATCH carries no body for App Engine; relative URIs start with '/', no fragment.
  auto patch = app_engine_target<Order>("/o")
                   .with_body([](const Order& o) { return o.body; })
                   .with_method(google::cloud::tasks::v2::PATCH)
                   .build();
  EXPECT_EQ((*patch->serialize(Order{"1", "b"}, Ctx()))->app_engine_http_request().body(), "");
  EXPECT_FALSE(
      app_engine_target<Order>("orders").with_body([](const Order&) { return ""; }).build().ok());
  EXPECT_FALSE(
      app_engine_target<Order>("/o#frag").with_body([](const Order&) { return ""; }).build().ok());
  EXPECT_TRUE(app_engine_target<Order>("").with_body([](const Order&) { return ""; }).build().ok())
      << "an empty relative URI is the root path";
}

}  // namespace
}  // namespace gcpstream::tasks
