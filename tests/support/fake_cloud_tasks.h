#ifndef GCPSTREAM_TESTS_SUPPORT_FAKE_CLOUD_TASKS_H_
#define GCPSTREAM_TESTS_SUPPORT_FAKE_CLOUD_TASKS_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gcpstream/tasks/client/cloud_tasks_stub.h"

namespace gcpstream::testing {

// A CloudTasksStub that records every CreateTask and answers when told to (or at once through
// `on_create`). Thread-safe. Cancelling a pending call answers it CANCELLED, as gRPC does.
class FakeCloudTasksStub final : public tasks::CloudTasksStub {
 public:
  using Task = google::cloud::tasks::v2::Task;
  struct Call {
    google::cloud::tasks::v2::CreateTaskRequest request;
    std::chrono::milliseconds timeout{0};
    CreateCallback done;  // empty once answered
    bool cancelled = false;
  };
  // Answers a call inline (index within its queue, the call); nullopt leaves it pending.
  std::function<std::optional<absl::Status>(std::size_t, const Call&)> on_create;

  std::function<void()> async_create_task(
      std::shared_ptr<const google::cloud::tasks::v2::CreateTaskRequest> request,
      std::chrono::milliseconds timeout, CreateCallback done) override {
    std::size_t index = 0;
    std::function<std::optional<absl::Status>(std::size_t, const Call&)> responder;
    Call snapshot;
    {
      std::lock_guard lock(mu_);
      auto& calls = calls_[request->parent()];
      index = calls.size();
      calls.push_back(Call{*request, timeout, std::move(done), false});
      responder = on_create;
      snapshot.request = calls.back().request;
    }
    if (responder) {
      if (auto answer = responder(index, snapshot)) complete(request->parent(), index, *answer);
    }
    const std::string parent = request->parent();
    return [this, parent, index] {
      {
        std::lock_guard lock(mu_);
        calls_[parent][index].cancelled = true;
      }
      complete(parent, index, absl::CancelledError("cancelled"));
    };
  }

  // Answers call `i` of `queue` (ignored when it was answered already). OK answers the task.
  void complete(const std::string& queue, std::size_t i, absl::Status status) {
    CreateCallback done;
    Task task;
    {
      std::lock_guard lock(mu_);
      auto it = calls_.find(queue);
      if (it == calls_.end() || i >= it->second.size() || !it->second[i].done) return;
      done = std::move(it->second[i].done);
      it->second[i].done = nullptr;
      task = it->second[i].request.task();
    }
    if (status.ok()) {
      done(std::move(task));
    } else {
      done(std::move(status));
    }
  }

  std::size_t size(const std::string& queue) {
    std::lock_guard lock(mu_);
    return calls_[queue].size();
  }
  Call call(const std::string& queue, std::size_t i) {
    std::lock_guard lock(mu_);
    Call c = calls_[queue].at(i);
    c.done = nullptr;
    return c;
  }
  int cancelled(const std::string& queue) {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& c : calls_[queue]) n += c.cancelled ? 1 : 0;
    return n;
  }
  std::size_t pending(const std::string& queue) {
    std::lock_guard lock(mu_);
    std::size_t n = 0;
    for (const auto& c : calls_[queue]) n += c.done ? 1 : 0;
    return n;
  }
  std::vector<std::string> queues() {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto& [q, unused] : calls_) out.push_back(q);
    return out;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<Call>> calls_;
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_FAKE_CLOUD_TASKS_H_
