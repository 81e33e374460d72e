#ifndef GCPSTREAM_TESTS_SUPPORT_FAKE_PUBSUB_H_
#define GCPSTREAM_TESTS_SUPPORT_FAKE_PUBSUB_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gcpstream/pubsub/admin/topic_admin.h"
#include "gcpstream/pubsub/client/publisher.h"
#include "gcpstream/pubsub/client/publisher_stub.h"

namespace gcpstream::testing {

// A publisher that completes nothing on its own: the test decides when and how each publish
// completes (from any thread). Thread-safe.
class FakePublisher final : public pubsub::Publisher {
 public:
  struct Call {
    Message message;
    std::uint64_t token = 0;
    bool solo = false;
    bool completed = false;
  };
  explicit FakePublisher(std::shared_ptr<pubsub::PublishListener> listener)
      : listener_(std::move(listener)) {}
  void publish(Message&& message, std::uint64_t token) override {
    record(std::move(message), token, false);
  }
  void publish_solo(Message&& message, std::uint64_t token) override {
    record(std::move(message), token, true);
  }
  void flush() override { flushes_++; }
  void resume_publish(const std::string& key) override {
    std::lock_guard lock(mu_);
    resumed_.push_back(key);
  }
  absl::Status shutdown() override {
    shutdowns_++;
    return absl::OkStatus();
  }

  // Completes call `i` (in publish order) with a message id or a failure.
  // A failed publish hands the message back, as the real publisher does.
  void complete(std::size_t i, absl::StatusOr<std::string> result) {
    std::uint64_t token;
    std::optional<Message> returned;
    {
      std::lock_guard lock(mu_);
      if (i >= calls_.size() || calls_[i].completed) return;
      calls_[i].completed = true;
      token = calls_[i].token;
      if (!result.ok()) returned = calls_[i].message;
    }
    std::vector<pubsub::PublishOutcome> outcomes;
    outcomes.push_back({token, std::move(result), std::move(returned)});
    listener_->on_published(std::move(outcomes), {});
  }
  // Completes every call not yet completed, successfully.
  void complete_all() {
    for (std::size_t i = 0; i < size(); ++i) complete(i, std::string("id-") + std::to_string(i));
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return calls_.size();
  }
  std::size_t pending() const {
    std::lock_guard lock(mu_);
    std::size_t n = 0;
    for (const auto& c : calls_) n += c.completed ? 0 : 1;
    return n;
  }
  Call call(std::size_t i) const {
    std::lock_guard lock(mu_);
    return calls_.at(i);
  }
  std::vector<std::string> resumed() const {
    std::lock_guard lock(mu_);
    return resumed_;
  }
  int flushes() const { return flushes_.load(); }
  int shutdowns() const { return shutdowns_.load(); }
  // Runs on every publish (after recording it), on the caller's thread; lets a test answer at
  // once.
  std::function<void(std::size_t index, const Call&)> on_publish;

 private:
  void record(Message&& message, std::uint64_t token, bool solo) {
    std::size_t index;
    Call copy;
    {
      std::lock_guard lock(mu_);
      calls_.push_back({std::move(message), token, solo, false});
      index = calls_.size() - 1;
      if (on_publish) copy = calls_.back();
    }
    if (on_publish) on_publish(index, copy);
  }
  std::shared_ptr<pubsub::PublishListener> listener_;
  mutable std::mutex mu_;
  std::vector<Call> calls_;
  std::vector<std::string> resumed_;
  std::atomic<int> flushes_{0};
  std::atomic<int> shutdowns_{0};
};

class FakePublisherFactory final : public pubsub::PublisherFactory {
 public:
  absl::StatusOr<std::shared_ptr<pubsub::Publisher>> create(
      const connector::TopicDestination& topic,
      std::shared_ptr<pubsub::PublishListener> listener) override {
    std::lock_guard lock(mu_);
    auto publisher = std::make_shared<FakePublisher>(std::move(listener));
    if (configure) configure(topic.topic, *publisher);
    publishers_[topic.topic].push_back(publisher);
    created_++;
    return std::shared_ptr<pubsub::Publisher>(publisher);
  }
  // The latest publisher created for a topic id (null if none).
  std::shared_ptr<FakePublisher> latest(const std::string& topic) {
    std::lock_guard lock(mu_);
    auto it = publishers_.find(topic);
    return it == publishers_.end() ? nullptr : it->second.back();
  }
  int created() const { return created_.load(); }
  // Every topic id a publisher was created for, with its publishers (latest last).
  std::map<std::string, std::vector<std::shared_ptr<FakePublisher>>> all() {
    std::lock_guard lock(mu_);
    return publishers_;
  }
  // Called for every new publisher (e.g. to install on_publish), under the factory's lock.
  std::function<void(const std::string& topic, FakePublisher&)> configure;

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<std::shared_ptr<FakePublisher>>> publishers_;
  std::atomic<int> created_{0};
};

// Answers topic creations at once with `result` and records them.
class FakeTopicAdmin final : public pubsub::TopicAdmin {
 public:
  void async_create_topic(const connector::TopicDestination& topic,
                          const pubsub::TopicCreateOptions& options,
                          std::function<void(absl::StatusOr<bool>)> done) override {
    {
      std::lock_guard lock(mu_);
      created.push_back(options.to_proto(topic));
    }
    done(result);
  }
  void async_get_topic(
      const connector::TopicDestination&,
      std::function<void(absl::StatusOr<google::pubsub::v1::Topic>)> done) override {
    done(absl::UnimplementedError("not faked"));
  }
  std::mutex mu_;
  std::vector<google::pubsub::v1::Topic> created;
  absl::StatusOr<bool> result = true;
};

// A Publish stub whose calls the test answers. Thread-safe.
class FakePublisherStub final : public pubsub::PublisherStub {
 public:
  struct Call {
    google::pubsub::v1::PublishRequest request;
    PublishCallback done;
    std::chrono::milliseconds timeout;
    bool answered = false;
    bool cancelled = false;
  };
  std::function<void()> async_publish(
      std::shared_ptr<const google::pubsub::v1::PublishRequest> request,
      std::chrono::milliseconds timeout, PublishCallback done) override {
    std::size_t index;
    {
      std::lock_guard lock(mu_);
      calls_.push_back({*request, std::move(done), timeout});
      index = calls_.size() - 1;
    }
    cv_.notify_all();
    return [this, index] { answer(index, absl::CancelledError("cancelled by the client")); };
  }
  // Answers call `i`: OK with one id per message, or a failure.
  void answer(std::size_t i, absl::Status status) {
    PublishCallback done;
    google::pubsub::v1::PublishResponse response;
    {
      std::lock_guard lock(mu_);
      if (i >= calls_.size() || calls_[i].answered) return;
      calls_[i].answered = true;
      done = std::move(calls_[i].done);  // the stub must not keep the caller alive
      for (int m = 0; m < calls_[i].request.messages_size(); ++m) {
        response.add_message_ids("id-" + std::to_string(i) + "-" + std::to_string(m));
      }
    }
    if (status.ok()) {
      done(std::move(response));
    } else {
      done(std::move(status));
    }
  }
  // Waits (up to `timeout`) until at least `n` calls were made; returns how many there are.
  std::size_t wait_for_calls(std::size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return calls_.size() >= n; });
    return calls_.size();
  }
  Call call(std::size_t i) {
    std::lock_guard lock(mu_);
    return calls_.at(i);
  }
  std::size_t size() {
    std::lock_guard lock(mu_);
    return calls_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Call> calls_;
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_FAKE_PUBSUB_H_
