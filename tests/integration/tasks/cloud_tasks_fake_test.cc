// The Cloud Tasks fake's documented behaviours, one test each, through a real gRPC channel and
// the library's QueueAdmin. Each test names the public documentation it follows: the v2 API
// reference (google/cloud/tasks/v2/cloudtasks.proto, task.proto, target.proto, the same text as
// cloud.google.com/tasks/docs/reference/rpc/google.cloud.tasks.v2) and the "Quotas & limits"
// page.
#include "tests/fakes/cloud_tasks_fake.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "gcpstream/tasks/admin/queue_admin.h"

namespace gcpstream::testing {
namespace {

using namespace std::chrono_literals;
using connector::QueueDestination;
using ::testing::HasSubstr;
namespace v2 = google::cloud::tasks::v2;

const QueueDestination kQueue = QueueDestination::of("p", "us-central1", "q");

// A clock the test moves by hand.
struct ManualClock {
  std::mutex mu;
  absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  absl::Time get() {
    std::lock_guard lock(mu);
    return now;
  }
  void advance(absl::Duration d) {
    std::lock_guard lock(mu);
    now += d;
  }
};

class CloudTasksFakeTest : public ::testing::Test {
 protected:
  void SetUp() override { start({}); }
  void start(CloudTasksFakeOptions options) {
    options.clock = [c = clock_] { return c->get(); };
    fake_.reset();
    auto fake = CloudTasksFake::Start(options);
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = std::move(*fake);
    channel_ = grpc::CreateChannel(fake_->endpoint(), grpc::InsecureChannelCredentials());
    stub_ = v2::CloudTasks::NewStub(channel_);
    admin_ = std::make_unique<tasks::QueueAdmin>(channel_, 10s);
    ASSERT_TRUE(admin_->create_queue(kQueue).ok());
  }
  // One CreateTask; the answer's status, the task in `out`.
  grpc::Status create(const v2::Task& task, v2::Task* out = nullptr,
                      v2::Task::View view = v2::Task::BASIC,
                      const std::string& parent = kQueue.resource_name()) {
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + 10s);
    v2::CreateTaskRequest r;
    r.set_parent(parent);
    *r.mutable_task() = task;
    r.set_response_view(view);
    v2::Task answer;
    grpc::Status s = stub_->CreateTask(&c, r, &answer);
    if (out != nullptr) *out = answer;
    return s;
  }
  static v2::Task Http(const std::string& id = "", const std::string& body = "b") {
    v2::Task t;
    if (!id.empty()) t.set_name(kQueue.resource_name() + "/tasks/" + id);
    t.mutable_http_request()->set_url("https://example.com/h");
    t.mutable_http_request()->set_body(body);
    (*t.mutable_http_request()->mutable_headers())["X-A"] = "1";
    return t;
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::unique_ptr<CloudTasksFake> fake_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v2::CloudTasks::Stub> stub_;
  std::unique_ptr<tasks::QueueAdmin> admin_;
};

// CreateTaskRequest.task: "If a name is not specified then the system will generate a random
// unique task id, which will be set in the task returned in the response."
TEST_F(CloudTasksFakeTest, AnUnnamedTaskGetsAServerAssignedName) {
  v2::Task a, b;
  ASSERT_TRUE(create(Http(), &a).ok());
  ASSERT_TRUE(create(Http(), &b).ok());
  EXPECT_THAT(a.name(), HasSubstr(kQueue.resource_name() + "/tasks/"));
  EXPECT_NE(a.name(), b.name());
  EXPECT_EQ(fake_->tasks(kQueue.resource_name()).size(), 2u) << "two unnamed creates, two tasks";
}

// CreateTaskRequest.task, "Task De-duplication": an id identical to an existing task's, or to
// one "deleted or executed recently", fails with ALREADY_EXISTS; for queues made through the
// API the name cannot be reused for ~1 hour after deletion or execution.
TEST_F(CloudTasksFakeTest, ANamedTaskIsRememberedWhileItExistsAndForAnHourAfterItIsDeleted) {
  ASSERT_TRUE(create(Http("order-1")).ok());
  EXPECT_EQ(create(Http("order-1")).error_code(), grpc::ALREADY_EXISTS);
  ASSERT_TRUE(admin_->delete_task(kQueue.resource_name() + "/tasks/order-1").ok());
  EXPECT_EQ(create(Http("order-1")).error_code(), grpc::ALREADY_EXISTS)
      << "the name stays reserved after deletion";
  clock_->advance(absl::Minutes(59));
  EXPECT_EQ(create(Http("order-1")).error_code(), grpc::ALREADY_EXISTS);
  clock_->advance(absl::Minutes(2));
  EXPECT_TRUE(create(Http("order-1")).ok()) << "released after the retention window";
}

// RunTask: "If Cloud Tasks receives a successful response from the task's target, then the task
// will be deleted"; the name of an executed task is reserved like a deleted one's.
TEST_F(CloudTasksFakeTest, AnExecutedTaskIsRemovedAndItsNameStaysReserved) {
  ASSERT_TRUE(create(Http("run-me")).ok());
  auto ran = admin_->run_task(kQueue.resource_name() + "/tasks/run-me");
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->dispatch_count(), 1);
  EXPECT_TRUE(fake_->tasks(kQueue.resource_name()).empty());
  EXPECT_EQ(create(Http("run-me")).error_code(), grpc::ALREADY_EXISTS);
  EXPECT_EQ(admin_->get_task(kQueue.resource_name() + "/tasks/run-me").status().code(),
            absl::StatusCode::kNotFound);
}

// CreateTaskRequest.parent: "The queue must already exist."
TEST_F(CloudTasksFakeTest, AMissingQueueAnswersNotFound) {
  EXPECT_EQ(create(Http(), nullptr, v2::Task::BASIC, "projects/p/locations/us-central1/queues/nope")
                .error_code(),
            grpc::NOT_FOUND);
  EXPECT_EQ(admin_->get_queue(QueueDestination::of("p", "us-central1", "nope")).status().code(),
            absl::StatusCode::kNotFound);
}

// PauseQueue: "Tasks can still be added when the queue is paused."
TEST_F(CloudTasksFakeTest, APausedQueueStillAcceptsTasks) {
  auto paused = admin_->pause_queue(kQueue);
  ASSERT_TRUE(paused.ok()) << paused.status();
  EXPECT_EQ(paused->state(), v2::Queue::PAUSED);
  EXPECT_TRUE(create(Http()).ok());
  auto resumed = admin_->resume_queue(kQueue);
  EXPECT_EQ(resumed->state(), v2::Queue::RUNNING);
}

// CreateTask: "The maximum task size is 100KB."
TEST_F(CloudTasksFakeTest, ATaskOverOneHundredKilobytesIsInvalid) {
  EXPECT_TRUE(create(Http("", std::string(100 * 1024 - 200, 'x'))).ok());
  grpc::Status s = create(Http("", std::string(100 * 1024 + 1, 'x')));
  EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("100KB"));
}

// Quotas & limits: "Maximum schedule time for a task: 30 days from current date and time".
TEST_F(CloudTasksFakeTest, AScheduleTimeMoreThanThirtyDaysAheadIsInvalid) {
  v2::Task t = Http();
  t.mutable_schedule_time()->set_seconds(absl::ToUnixSeconds(clock_->get() + absl::Hours(24 * 29)));
  EXPECT_TRUE(create(t).ok());
  t.mutable_schedule_time()->set_seconds(absl::ToUnixSeconds(clock_->get() + absl::Hours(24 * 31)));
  EXPECT_EQ(create(t).error_code(), grpc::INVALID_ARGUMENT);
}

// Task.name: TASK_ID "can contain only letters ([A-Za-z]), numbers ([0-9]), hyphens (-), or
// underscores (_). The maximum length is 500 characters."
TEST_F(CloudTasksFakeTest, TaskNamesFollowTheDocumentedFormat) {
  EXPECT_TRUE(create(Http(std::string(500, 'a'))).ok());
  EXPECT_EQ(create(Http(std::string(501, 'a'))).error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_EQ(create(Http("has.dot")).error_code(), grpc::INVALID_ARGUMENT);
  v2::Task other = Http();
  other.set_name("projects/p/locations/us-central1/queues/other/tasks/x");
  EXPECT_EQ(create(other).error_code(), grpc::INVALID_ARGUMENT) << "a name in another queue";
}

// HttpRequest.body: "A request body is allowed only if the HTTP method is POST, PUT, or PATCH";
// AppEngineHttpRequest.body: "only if the HTTP method is POST or PUT"; HttpRequest.url must
// begin with "http://" or "https://" and is at most 2083 characters.
TEST_F(CloudTasksFakeTest, TargetsFollowTheDocumentedRules) {
  v2::Task get = Http();
  get.mutable_http_request()->set_http_method(v2::GET);
  EXPECT_EQ(create(get).error_code(), grpc::INVALID_ARGUMENT);
  get.mutable_http_request()->clear_body();
  EXPECT_TRUE(create(get).ok());
  v2::Task ftp = Http();
  ftp.mutable_http_request()->set_url("ftp://example.com/");
  EXPECT_EQ(create(ftp).error_code(), grpc::INVALID_ARGUMENT);
  v2::Task app;
  app.mutable_app_engine_http_request()->set_relative_uri("/work");
  app.mutable_app_engine_http_request()->set_http_method(v2::PATCH);
  app.mutable_app_engine_http_request()->set_body("b");
  EXPECT_EQ(create(app).error_code(), grpc::INVALID_ARGUMENT);
  app.mutable_app_engine_http_request()->set_http_method(v2::PUT);
  EXPECT_TRUE(create(app).ok());
  v2::Task none;
  EXPECT_EQ(create(none).error_code(), grpc::INVALID_ARGUMENT) << "a task needs a target";
}

// AppEngineRouting.host is output only: the service fills it in whatever the caller sent.
TEST_F(CloudTasksFakeTest, AppEngineRoutingHostIsOutputOnly) {
  v2::Task app;
  app.mutable_app_engine_http_request()->set_relative_uri("/work");
  auto* routing = app.mutable_app_engine_http_request()->mutable_app_engine_routing();
  routing->set_service("worker");
  routing->set_host("evil.example.com");
  v2::Task out;
  ASSERT_TRUE(create(app, &out, v2::Task::FULL).ok());
  EXPECT_EQ(out.app_engine_http_request().app_engine_routing().host(), "worker.p.appspot.com");
}

// Task.View: BASIC (the default) leaves out data "desirable to return only when needed"
// (bodies, headers); FULL returns everything.
TEST_F(CloudTasksFakeTest, TheBasicViewLeavesOutBodiesAndHeaders) {
  v2::Task basic, full;
  ASSERT_TRUE(create(Http("v1"), &basic).ok());
  EXPECT_EQ(basic.http_request().body(), "");
  EXPECT_TRUE(basic.http_request().headers().empty());
  ASSERT_TRUE(create(Http("v2"), &full, v2::Task::FULL).ok());
  EXPECT_EQ(full.http_request().body(), "b");
  auto listed = admin_->list_tasks(kQueue);  // asks for FULL
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].http_request().headers().at("X-A"), "1");
}

// ListTasks pages with page_size (at most 1000) and next_page_token.
TEST_F(CloudTasksFakeTest, ListTasksPages) {
  for (int i = 0; i < 2500; ++i) ASSERT_TRUE(create(Http()).ok());
  auto all = admin_->list_tasks(kQueue);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 2500u);
}

// PurgeQueue: "All tasks created before this method is called are permanently deleted."
TEST_F(CloudTasksFakeTest, PurgeDeletesEveryTaskAndDeleteQueueRemovesTheQueue) {
  ASSERT_TRUE(create(Http("p1")).ok());
  ASSERT_TRUE(admin_->purge_queue(kQueue).ok());
  EXPECT_TRUE(fake_->tasks(kQueue.resource_name()).empty());
  EXPECT_EQ(admin_->create_queue(kQueue).status().code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(admin_->delete_queue(kQueue).ok());
  EXPECT_EQ(admin_->get_queue(kQueue).status().code(), absl::StatusCode::kNotFound);
}

// --- fault injection (not Cloud Tasks behaviour: the statuses a busy or flaky service gives) ---

TEST_F(CloudTasksFakeTest, FaultsRefuseAboveTheConcurrencyFailTheNthCallAndLoseAnswers) {
  CloudTasksFakeOptions o;
  o.max_concurrent_creates = 2;
  o.create_latency = 200ms;
  start(o);
  std::vector<std::thread> callers;
  std::atomic<int> exhausted{0};
  for (int i = 0; i < 4; ++i) {
    callers.emplace_back([&] {
      if (create(Http()).error_code() == grpc::RESOURCE_EXHAUSTED) ++exhausted;
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_GE(exhausted.load(), 1) << "4 concurrent calls against a limit of 2";
  EXPECT_EQ(fake_->tasks_created() + exhausted.load(), 4);
  EXPECT_GE(fake_->peak_concurrent_creates(), 3);

  CloudTasksFakeOptions faults;
  faults.unavailable_on_call = 1;
  faults.lose_answer_every = 2;
  start(faults);
  EXPECT_EQ(create(Http("x")).error_code(), grpc::UNAVAILABLE);
  EXPECT_TRUE(fake_->tasks(kQueue.resource_name()).empty()) << "UNAVAILABLE applies nothing";
  EXPECT_EQ(create(Http("x")).error_code(), grpc::DEADLINE_EXCEEDED);
  EXPECT_EQ(fake_->tasks(kQueue.resource_name()).size(), 1u) << "the lost answer's task exists";
  EXPECT_EQ(create(Http("x")).error_code(), grpc::ALREADY_EXISTS);
}

}  // namespace
}  // namespace gcpstream::testing
