#include "gcpstream/tasks/client/task_creator.h"

#include <fmt/format.h>

#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::tasks {

using google::cloud::tasks::v2::CreateTaskRequest;

struct TaskCreator::Call {
  std::uint64_t id = 0;
  std::uint64_t token = 0;
  std::shared_ptr<CreateTaskRequest> request;
  // Made at the first failure of their kind (most creates never need one).
  std::optional<connector::RecoveryBackoff> transient;
  std::optional<connector::RecoveryBackoff> not_found;
  int attempts = 0;
  std::function<void()> cancel;              // while in flight
  std::shared_ptr<util::TimerHandle> retry;  // while waiting out a backoff
};

TaskCreator::TaskCreator(std::string parent, std::shared_ptr<CloudTasksStub> stub,
                         std::shared_ptr<util::TimerThread> timers,
                         CreateTaskRetrySettings settings, CreateTaskHooks hooks,
                         std::shared_ptr<connector::SinkOutcomeListener<Task>> listener)
    : parent_(std::move(parent)),
      stub_(std::move(stub)),
      timers_(std::move(timers)),
      settings_(std::move(settings)),
      hooks_(std::move(hooks)),
      listener_(std::move(listener)) {
  if (!hooks_.uniform01) {
    struct Engine {
      std::mutex mu;
      std::mt19937_64 engine{std::random_device{}()};
    };
    auto engine = std::make_shared<Engine>();
    hooks_.uniform01 = [engine] {
      std::lock_guard lock(engine->mu);
      return std::uniform_real_distribution<double>(0, 1)(engine->engine);
    };
  }
}

TaskCreator::~TaskCreator() { (void)shutdown(); }

void TaskCreator::create(Task&& task, std::uint64_t token) {
  auto call = std::make_shared<Call>();
  call->token = token;
  call->request = std::make_shared<CreateTaskRequest>();
  call->request->set_parent(parent_);
  *call->request->mutable_task() = std::move(task);
  {
    std::lock_guard lock(mu_);
    if (!shutting_down_) {
      call->id = next_id_++;
      live_.emplace(call->id, call);
    } else {
      call->id = UINT64_MAX;
    }
  }
  if (call->id == UINT64_MAX) {
    std::vector<connector::SinkOutcome<Task>> out;
    out.push_back({token, absl::CancelledError("the Cloud Tasks creator was shut down"),
                   std::move(*call->request->mutable_task())});
    listener_->on_outcomes(std::move(out), nullptr);
    return;
  }
  send(call);
}

void TaskCreator::send(const std::shared_ptr<Call>& call) {
  int attempt = 0;
  {
    std::lock_guard lock(mu_);
    attempt = ++call->attempts;
  }
  // The callback holds the creator: it outlives every answer it still has to handle.
  auto cancel =
      stub_->async_create_task(call->request, settings_.attempt_timeout,
                               [self = shared_from_this(), call](absl::StatusOr<Task> answer) {
                                 self->on_answer(call, std::move(answer));
                               });
  bool cancel_now = false;
  {
    std::lock_guard lock(mu_);
    // The answer may already have arrived (a stub answering on the caller's thread), and a
    // retry sent after shutdown() began is cancelled at once.
    if (live_.count(call->id) != 0 && !call->retry && call->attempts == attempt) {
      call->cancel = cancel;
      cancel_now = shutting_down_;
    }
  }
  if (cancel_now) cancel();
}

void TaskCreator::on_answer(const std::shared_ptr<Call>& call, absl::StatusOr<Task> answer) {
  if (answer.ok()) return finish(call, absl::OkStatus());
  const absl::Status& s = answer.status();
  const bool named = !call->request->task().name().empty();
  if (s.code() == absl::StatusCode::kAlreadyExists && named) {
    {
      // Hooks run under the lock and never after shutdown() began: what they count may be gone
      // once the writer closed.
      std::lock_guard lock(mu_);
      if (!shutting_down_ && hooks_.on_deduplicated) hooks_.on_deduplicated();
    }
    return finish(call, absl::OkStatus());
  }
  std::optional<connector::RecoveryBackoff>* budget = nullptr;
  const connector::RecoveryOptions* options = nullptr;
  const char* option = "";
  switch (s.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:
      budget = &call->transient;
      options = &settings_.transient;
      option = "retry_max_attempts";
      break;
    case absl::StatusCode::kNotFound:
      budget = &call->not_found;
      options = &settings_.not_found;
      option = "not_found_max_attempts";
      break;
    default:
      return finish(call, s);
  }
  if (!*budget) budget->emplace(*options, hooks_.uniform01);
  std::optional<std::chrono::milliseconds> delay = (*budget)->next();
  if (delay) {
    std::lock_guard lock(mu_);
    if (!shutting_down_) {
      call->cancel = nullptr;
      waiting_.fetch_add(1, std::memory_order_relaxed);
      std::weak_ptr<TaskCreator> weak = weak_from_this();
      call->retry = timers_->schedule(std::chrono::steady_clock::now() + *delay, [weak, call] {
        auto self = weak.lock();
        if (!self) return;
        {
          std::lock_guard inner(self->mu_);
          if (!call->retry) return;  // shutdown() already failed it
          call->retry = nullptr;
          self->waiting_.fetch_sub(1, std::memory_order_relaxed);
        }
        self->send(call);
      });
      if (hooks_.on_retried_failure) hooks_.on_retried_failure(s.code());
      return;
    }
  }
  // The budget is spent (or the creator is shutting down): the last code, with the count, and
  // the status's payloads (its cause chain) kept.
  int attempts = 0;
  {
    std::lock_guard lock(mu_);
    attempts = call->attempts;
  }
  absl::Status last(s.code(),
                    fmt::format("{} (CreateTask gave up after {} attempts; {} is {})", s.message(),
                                attempts, option, options->max_attempts + 1));
  s.ForEachPayload([&](auto url, const absl::Cord& payload) { last.SetPayload(url, payload); });
  finish(call, std::move(last));
}

void TaskCreator::finish(const std::shared_ptr<Call>& call, absl::Status status) {
  {
    std::lock_guard lock(mu_);
    call->cancel = nullptr;
  }
  std::vector<connector::SinkOutcome<Task>> out;
  connector::SinkOutcome<Task> o;
  o.token = call->token;
  if (!status.ok()) o.element = std::move(*call->request->mutable_task());
  o.status = std::move(status);
  out.push_back(std::move(o));
  // The request travels as spent memory: the writer frees it on its own thread.
  listener_->on_outcomes(std::move(out), call->request);
  // Erased last: shutdown() returns only once no outcome is being delivered.
  std::lock_guard lock(mu_);
  live_.erase(call->id);
  if (live_.empty()) all_done_.notify_all();
}

absl::Status TaskCreator::shutdown() {
  std::vector<std::shared_ptr<Call>> waiting;
  std::vector<std::function<void()>> cancels;
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
    for (auto& [id, call] : live_) {
      if (call->retry) {
        call->retry->cancel();
        call->retry = nullptr;
        waiting_.fetch_sub(1, std::memory_order_relaxed);
        waiting.push_back(call);
      } else if (call->cancel) {
        cancels.push_back(call->cancel);
      }
    }
  }
  for (auto& cancel : cancels) cancel();
  for (auto& call : waiting) {
    finish(call, absl::CancelledError(
                     "the Cloud Tasks writer closed while this create waited out a retry "
                     "backoff; the record is replayed from the last checkpoint"));
  }
  std::unique_lock lock(mu_);
  all_done_.wait(lock, [&] { return live_.empty(); });
  return absl::OkStatus();
}

}  // namespace gcpstream::tasks
