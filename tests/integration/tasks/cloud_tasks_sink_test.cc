// The Cloud Tasks sink through its builder against the in-repo fake service over gRPC (the
// production client in emulator mode): deduplication across a replay, a name reserved after its
// task ran, thousands of creates under refusals and lost answers inside a checkpointed job, a
// missing queue, and an oversized task routed to the handler.
#include "gcpstream/tasks/sink/cloud_tasks_sink.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "gcpstream/tasks/admin/queue_admin.h"
#include "gcpstream/tasks/admin/resource_names.h"
#include "tests/fakes/cloud_tasks_fake.h"
#include "tests/support/fake_contexts.h"

namespace gcpstream::tasks {
namespace {

using namespace std::chrono_literals;
using connector::QueueDestination;
using ::testing::HasSubstr;
using Task = google::cloud::tasks::v2::Task;

const QueueDestination kQueue = QueueDestination::of("p", "us-central1", "sink-it");

class CloudTasksSinkIT : public ::testing::Test {
 protected:
  void SetUp() override { start({}); }
  void start(testing::CloudTasksFakeOptions options) {
    options.clock = [this] {
      std::lock_guard lock(clock_mu_);
      return now_;
    };
    fake_.reset();
    auto fake = testing::CloudTasksFake::Start(options);
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = std::move(*fake);
    ASSERT_TRUE(fake_->add_queue(kQueue.resource_name()).ok());
  }
  void advance(absl::Duration d) {
    std::lock_guard lock(clock_mu_);
    now_ += d;
  }

  // Keys become tasks POSTing the key to a fixed URL.
  template <typename T>
  typename CloudTasksSink<T>::Builder builder(bool named) {
    auto schema = http_target<T>("https://handler.example.com/work")
                      .with_body([](const T& v) { return Key(v); })
                      .build();
    auto b = CloudTasksSink<T>::builder();
    b.queue(kQueue).serializer(*schema).emulator_endpoint(fake_->endpoint());
    if (named) b.task_id_extractor([](const T& v) { return Key(v); });
    return b;
  }
  static std::string Key(const std::string& v) { return v; }
  static std::string Key(const std::int64_t& v) { return "key-" + std::to_string(v); }

  // Writes `keys` through a fresh writer and flushes, as one run up to its checkpoint does.
  void run_writer(CloudTasksSink<std::string>::Builder b, const std::vector<std::string>& keys) {
    testing::TestMailbox mailbox;
    testing::FakeWriterInitContext context(mailbox);
    auto sink = b.build();
    ASSERT_TRUE(sink.ok()) << sink.status();
    auto w = (*sink)->create_writer(context);
    ASSERT_TRUE(w.ok()) << w.status();
    SinkWriterContext ctx;
    for (const auto& k : keys) ASSERT_TRUE((*w)->write(k, ctx).ok());
    ASSERT_TRUE((*w)->flush(false).ok());
    deduplicated_ += context.metric("tasksDeduplicated");
    ASSERT_TRUE((*w)->close().ok());
  }
  std::multiset<std::string> bodies() {
    std::multiset<std::string> out;
    for (const auto& t : fake_->tasks(kQueue.resource_name())) out.insert(t.http_request().body());
    return out;
  }

  std::mutex clock_mu_;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
  std::unique_ptr<testing::CloudTasksFake> fake_;
  double deduplicated_ = 0;
};

std::vector<std::string> Keys(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back("k" + std::to_string(i));
  return out;
}

TEST_F(CloudTasksSinkIT, AReplayOfNamedTasksCreatesEachTaskOnce) {
  run_writer(builder<std::string>(true), Keys(0, 100));
  // The restored run replays half of what the first one sent.
  run_writer(builder<std::string>(true), Keys(50, 150));
  auto b = bodies();
  EXPECT_EQ(b.size(), 150u);
  EXPECT_EQ(std::set<std::string>(b.begin(), b.end()).size(), 150u) << "no key twice";
  EXPECT_EQ(deduplicated_, 50);
  for (const auto& t : fake_->tasks(kQueue.resource_name())) {
    EXPECT_EQ(t.name(), TaskName(kQueue, t.http_request().body()));
  }
}

TEST_F(CloudTasksSinkIT, AReplayOfUnnamedTasksCreatesThemAgain) {
  run_writer(builder<std::string>(false), Keys(0, 10));
  run_writer(builder<std::string>(false), Keys(5, 10));
  EXPECT_EQ(bodies().size(), 15u) << "at-least-once: the replayed five exist twice";
}

TEST_F(CloudTasksSinkIT, ANameStaysDeduplicatedAfterItsTaskRanUntilTheServiceForgetsIt) {
  run_writer(builder<std::string>(true), {"once"});
  QueueAdmin admin(grpc::CreateChannel(fake_->endpoint(), grpc::InsecureChannelCredentials()));
  ASSERT_TRUE(admin.run_task(TaskName(kQueue, "once")).ok()) << "the handler ran it";
  run_writer(builder<std::string>(true), {"once"});
  EXPECT_TRUE(bodies().empty()) << "a replay within the hour is absorbed";
  EXPECT_EQ(deduplicated_, 1);
  // The guarantee is bounded: once the name is released, a replay creates the task again.
  advance(absl::Hours(2));
  run_writer(builder<std::string>(true), {"once"});
  EXPECT_EQ(bodies().size(), 1u);
}

TEST_F(CloudTasksSinkIT,
       FiveThousandCreatesUnderRefusalsAndLostAnswersMakeExactlyFiveThousandTasks) {
  testing::CloudTasksFakeOptions faults;
  faults.max_concurrent_creates = 100;  // RESOURCE_EXHAUSTED above it
  faults.lose_answer_every = 20;        // created, answer lost: DEADLINE_EXCEEDED
  faults.create_latency = 20ms;
  start(faults);
  CloudTasksWriterOptions options;
  options.max_in_flight_tasks = 150;
  options.retry_initial_backoff = 5ms;
  options.retry_max_backoff = 50ms;
  options.retry_max_attempts = 20;
  StreamExecutionEnvironment env;
  env.set_parallelism(1);
  env.enable_checkpointing(50ms);
  auto b = builder<std::int64_t>(true);
  b.writer_options(options);
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  env.from_source(std::make_shared<NumberSequenceSource>(0, 4999, 1),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .sink_to(*sink, "tasks");
  auto result = env.execute("cloud-tasks-5000");
  ASSERT_TRUE(result.status.ok()) << result.status;
  auto b5000 = bodies();
  EXPECT_EQ(b5000.size(), 5000u);
  EXPECT_EQ(std::set<std::string>(b5000.begin(), b5000.end()).size(), 5000u);
  EXPECT_LE(fake_->peak_concurrent_creates(), 150) << "never more than max_in_flight_tasks";
  EXPECT_GT(fake_->refused_calls(), 0) << "the fake's limit of 100 was reached";
  EXPECT_GE(result.metric("tasks", "tasksDeduplicated"), 5000 / 20 - 10)
      << "lost answers come back ALREADY_EXISTS on retry";
  EXPECT_EQ(result.metric("tasks", "numRecordsSendErrors"), 0);
  EXPECT_TRUE(result.last_completed_checkpoint.has_value()) << "no checkpoint completed";
}

TEST_F(CloudTasksSinkIT, AMissingQueueFailsQuicklyNamingItAndNothingIsRouted) {
  testing::TestMailbox mailbox;
  testing::FakeWriterInitContext context(mailbox);
  std::atomic<int> routed{0};
  auto b = builder<std::string>(true);
  b.queue(QueueDestination::of("p", "us-central1", "typo-queue"))
      .failed_task_handler(connector::FailureHandler::custom([&](const connector::FailedElement&) {
        ++routed;
        return absl::OkStatus();
      }));
  auto sink = b.build();
  ASSERT_TRUE(sink.ok());
  auto w = (*sink)->create_writer(context);
  ASSERT_TRUE(w.ok());
  SinkWriterContext ctx;
  ASSERT_TRUE((*w)->write(std::string("a"), ctx).ok());
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = (*w)->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("typo-queue"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("never creates queues"));
  // Three attempts, 500 ms then 1 s apart (±25 %): the short budget, on the real clock.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_EQ(routed.load(), 0);
  EXPECT_EQ(context.metric("errorClass.NOT_FOUND.errors"), 3);
  ASSERT_TRUE((*w)->close().ok());
}

TEST_F(CloudTasksSinkIT, ATaskTheServiceRefusesIsRoutedAndTheRestAreCreated) {
  testing::TestMailbox mailbox;
  testing::FakeWriterInitContext context(mailbox);
  std::vector<std::string> payloads;
  auto b = builder<std::string>(false);
  b.failed_task_handler(connector::FailureHandler::custom([&](const connector::FailedElement& e) {
    payloads.push_back(e.payload_bytes());
    EXPECT_EQ(e.describe_destination(), kQueue.resource_name());
    EXPECT_EQ(e.connector(), "cloudtasks");
    return absl::OkStatus();
  }));
  auto sink = b.build();
  auto w = (*sink)->create_writer(context);
  ASSERT_TRUE(w.ok());
  SinkWriterContext ctx;
  ASSERT_TRUE((*w)->write(std::string("small"), ctx).ok());
  ASSERT_TRUE((*w)->write(std::string(200 * 1024, 'x'), ctx).ok());  // over 100 KB
  ASSERT_TRUE((*w)->write(std::string("small2"), ctx).ok());
  ASSERT_TRUE((*w)->flush(false).ok());
  ASSERT_EQ(payloads.size(), 1u);
  Task routed;
  ASSERT_TRUE(routed.ParseFromString(payloads[0]));
  EXPECT_EQ(routed.http_request().body().size(), 200u * 1024);
  EXPECT_EQ(bodies(), (std::multiset<std::string>{"small", "small2"}));
  ASSERT_TRUE((*w)->close().ok());
}

}  // namespace
}  // namespace gcpstream::tasks
