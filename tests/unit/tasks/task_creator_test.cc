// The task creator's two retry budgets, deduplication and shutdown, against a fake stub. Retry
// backoffs are 1 ms here (jitter pinned), so no test waits out a real budget.
#include "gcpstream/tasks/client/task_creator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "tests/support/fake_cloud_tasks.h"

namespace gcpstream::tasks {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using Task = google::cloud::tasks::v2::Task;

constexpr char kQueue[] = "projects/p/locations/l/queues/q";

// Collects outcomes; wait() has a deadline and says what did arrive.
class Outcomes final : public connector::SinkOutcomeListener<Task> {
 public:
  void on_outcomes(std::vector<connector::SinkOutcome<Task>> outcomes,
                   std::shared_ptr<void>) override {
    std::lock_guard lock(mu_);
    for (auto& o : outcomes) got_.push_back(std::move(o));
    cv_.notify_all();
  }
  std::vector<connector::SinkOutcome<Task>> wait(std::size_t n) {
    std::unique_lock lock(mu_);
    const bool arrived = cv_.wait_for(lock, 10s, [&] { return got_.size() >= n; });
    EXPECT_TRUE(arrived) << "waited 10 s for " << n << " outcomes; " << got_.size() << " arrived";
    return got_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<connector::SinkOutcome<Task>> got_;
};

class TaskCreatorTest : public ::testing::Test {
 protected:
  TaskCreatorTest() {
    settings_.transient = {1ms, 2ms, 2, 0.25};  // 3 attempts
    settings_.not_found = {1ms, 2ms, 1, 0.25};  // 2 attempts
    hooks_.uniform01 = [] { return 0.5; };
    hooks_.on_retried_failure = [this](absl::StatusCode c) {
      std::lock_guard lock(mu_);
      retried_.push_back(c);
    };
    hooks_.on_deduplicated = [this] { ++deduplicated_; };
  }
  std::shared_ptr<TaskCreator> creator() {
    return std::make_shared<TaskCreator>(kQueue, stub_, timers_, settings_, hooks_, outcomes_);
  }
  static Task Named(const std::string& id) {
    Task t;
    t.set_name(std::string(kQueue) + "/tasks/" + id);
    t.mutable_http_request()->set_url("https://example.com/");
    return t;
  }

  std::shared_ptr<testing::FakeCloudTasksStub> stub_ =
      std::make_shared<testing::FakeCloudTasksStub>();
  std::shared_ptr<util::TimerThread> timers_ = std::make_shared<util::TimerThread>();
  std::shared_ptr<Outcomes> outcomes_ = std::make_shared<Outcomes>();
  CreateTaskRetrySettings settings_;
  CreateTaskHooks hooks_;
  std::mutex mu_;
  std::vector<absl::StatusCode> retried_;
  std::atomic<int> deduplicated_{0};
};

TEST_F(TaskCreatorTest, TransientCodesAreRetriedUntilTheBudgetThenReportedWithTheAttempts) {
  stub_->on_create = [](std::size_t, const auto&) -> std::optional<absl::Status> {
    return absl::UnavailableError("down");
  };
  auto c = creator();
  c->create(Named("a"), 7);
  auto got = outcomes_->wait(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].token, 7u);
  EXPECT_EQ(got[0].status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(got[0].status.message()), HasSubstr("gave up after 3 attempts"));
  EXPECT_THAT(std::string(got[0].status.message()), HasSubstr("retry_max_attempts is 3"));
  ASSERT_TRUE(got[0].element.has_value()) << "a failure hands the task back";
  EXPECT_EQ(got[0].element->name(), Named("a").name());
  EXPECT_EQ(stub_->size(kQueue), 3u);
  std::lock_guard lock(mu_);
  EXPECT_EQ(retried_, (std::vector<absl::StatusCode>{absl::StatusCode::kUnavailable,
                                                     absl::StatusCode::kUnavailable}))
      << "the retried attempts are reported; the last one comes back as the outcome";
}

TEST_F(TaskCreatorTest, NotFoundSpendsItsOwnShortBudget) {
  stub_->on_create = [](std::size_t, const auto&) -> std::optional<absl::Status> {
    return absl::NotFoundError("no queue");
  };
  auto c = creator();
  c->create(Named("a"), 1);
  auto got = outcomes_->wait(1);
  EXPECT_EQ(got[0].status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(got[0].status.message()), HasSubstr("not_found_max_attempts is 2"));
  EXPECT_EQ(stub_->size(kQueue), 2u) << "two NOT_FOUND attempts, not the transient budget's 3";
}

TEST_F(TaskCreatorTest, DeadlineExceededAndResourceExhaustedShareTheTransientBudget) {
  stub_->on_create = [](std::size_t i, const auto&) -> std::optional<absl::Status> {
    if (i == 0) return absl::DeadlineExceededError("slow");
    if (i == 1) return absl::ResourceExhaustedError("quota");
    return absl::OkStatus();
  };
  auto c = creator();
  c->create(Named("a"), 1);
  auto got = outcomes_->wait(1);
  EXPECT_TRUE(got[0].status.ok()) << got[0].status;
  EXPECT_FALSE(got[0].element.has_value());
  EXPECT_EQ(stub_->size(kQueue), 3u);
}

TEST_F(TaskCreatorTest, ANamedCreateWhoseAnswerWasLostComesBackAlreadyExistsAndSucceeds) {
  // The first attempt applied but its answer was lost; the retry carries the same name.
  stub_->on_create = [](std::size_t i, const auto&) -> std::optional<absl::Status> {
    if (i == 0) return absl::DeadlineExceededError("answer lost");
    return absl::AlreadyExistsError("exists");
  };
  auto c = creator();
  c->create(Named("a"), 1);
  auto got = outcomes_->wait(1);
  EXPECT_TRUE(got[0].status.ok()) << got[0].status;
  EXPECT_EQ(deduplicated_.load(), 1);
  ASSERT_EQ(stub_->size(kQueue), 2u);
  EXPECT_EQ(stub_->call(kQueue, 0).request.task().name(),
            stub_->call(kQueue, 1).request.task().name())
      << "a retry re-sends the same request";
}

TEST_F(TaskCreatorTest, AlreadyExistsForAnUnnamedTaskIsAFailure) {
  stub_->on_create = [](std::size_t, const auto&) -> std::optional<absl::Status> {
    return absl::AlreadyExistsError("exists");
  };
  auto c = creator();
  Task t;
  t.mutable_http_request()->set_url("https://example.com/");
  c->create(std::move(t), 1);
  auto got = outcomes_->wait(1);
  EXPECT_EQ(got[0].status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(deduplicated_.load(), 0);
}

TEST_F(TaskCreatorTest, OtherCodesAreNeverRetried) {
  for (auto code : {absl::StatusCode::kInvalidArgument, absl::StatusCode::kPermissionDenied,
                    absl::StatusCode::kFailedPrecondition, absl::StatusCode::kInternal}) {
    auto stub = std::make_shared<testing::FakeCloudTasksStub>();
    stub->on_create = [code](std::size_t, const auto&) -> std::optional<absl::Status> {
      return absl::Status(code, "refused");
    };
    auto outcomes = std::make_shared<Outcomes>();
    auto c = std::make_shared<TaskCreator>(kQueue, stub, timers_, settings_, hooks_, outcomes);
    c->create(Named("a"), 1);
    auto got = outcomes->wait(1);
    EXPECT_EQ(got[0].status.code(), code);
    EXPECT_EQ(stub->size(kQueue), 1u) << absl::StatusCodeToString(code) << " was retried";
  }
}

TEST_F(TaskCreatorTest, ShutdownFailsCreatesWaitingOutABackoffAndCancelsThoseInFlight) {
  settings_.transient = {10s, 10s, 5, 0.25};
  stub_->on_create = [](std::size_t i, const auto&) -> std::optional<absl::Status> {
    if (i == 0) return absl::UnavailableError("down");  // then waits 10 s
    return std::nullopt;                                // in flight until cancelled
  };
  auto c = creator();
  c->create(Named("a"), 1);
  c->create(Named("b"), 2);
  EXPECT_EQ(c->waiting_retry(), 1);
  ASSERT_TRUE(c->shutdown().ok());
  auto got = outcomes_->wait(2);
  ASSERT_EQ(got.size(), 2u);
  for (const auto& o : got) {
    EXPECT_EQ(o.status.code(), absl::StatusCode::kCancelled) << o.status;
    EXPECT_TRUE(o.element.has_value()) << "the task is handed back";
  }
  EXPECT_EQ(c->waiting_retry(), 0);
  EXPECT_EQ(stub_->cancelled(kQueue), 1);
  // After shutdown, a create fails at once.
  c->create(Named("c"), 3);
  EXPECT_EQ(outcomes_->wait(3).back().status.code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace gcpstream::tasks
