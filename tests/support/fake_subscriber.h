#ifndef GCPSTREAM_TESTS_SUPPORT_FAKE_SUBSCRIBER_H_
#define GCPSTREAM_TESTS_SUPPORT_FAKE_SUBSCRIBER_H_

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gcpstream/pubsub/admin/subscription_admin.h"
#include "gcpstream/pubsub/client/subscriber.h"
#include "gcpstream/pubsub/client/subscriber_stub.h"

namespace gcpstream::testing {

// A StreamingPull service in memory. deliver() queues a response that the next reading stream
// takes; Acknowledge and ModifyAckDeadline are recorded. Follows the documented semantics the
// source relies on: a stream never ends on its own, ModifyAckDeadline(0) is a nack.
class FakeSubscriberStub final : public pubsub::SubscriberStub {
 public:
  using Clock = std::chrono::steady_clock;

  // Queues one response carrying messages with these ids ("ack-<id>" ack ids), data
  // "payload-<id>" and publish time `publish_ms`.
  void deliver(const std::vector<std::string>& ids, std::int64_t publish_ms = 1000,
               std::int64_t data_bytes = 0) {
    google::pubsub::v1::StreamingPullResponse response;
    for (const auto& id : ids) {
      auto* r = response.add_received_messages();
      r->set_ack_id("ack-" + id);
      r->mutable_message()->set_message_id(id);
      r->mutable_message()->set_data(data_bytes > 0
                                         ? std::string(static_cast<std::size_t>(data_bytes), 'x')
                                         : "payload-" + id);
      r->mutable_message()->mutable_publish_time()->set_seconds(publish_ms / 1000);
      r->mutable_message()->mutable_publish_time()->set_nanos(
          static_cast<int>((publish_ms % 1000) * 1000000));
    }
    {
      std::lock_guard lock(mu_);
      responses_.push_back(std::move(response));
    }
    cv_.notify_all();
  }
  // Ends every open stream with `status` (the next stream opened runs normally).
  void end_streams(absl::Status status) {
    {
      std::lock_guard lock(mu_);
      end_status_ = std::move(status);
      ++end_generation_;
    }
    cv_.notify_all();
  }

  std::unique_ptr<pubsub::StreamingPullStream> streaming_pull() override {
    std::lock_guard lock(mu_);
    ++streams_opened_;
    return std::make_unique<Stream>(this, end_generation_);
  }
  absl::Status acknowledge(const google::pubsub::v1::AcknowledgeRequest& request,
                           std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mu_);
    if (hang_acks_) {
      cv_.wait_for(lock, timeout, [&] { return !hang_acks_; });
      if (hang_acks_) return absl::DeadlineExceededError("fake: acknowledge timed out");
    }
    for (const auto& id : request.ack_ids()) acked_.push_back(id);
    settle_requests_.push_back({request.ack_ids_size(), request.ByteSizeLong()});
    cv_.notify_all();
    return ack_status_;
  }
  absl::Status modify_ack_deadline(const google::pubsub::v1::ModifyAckDeadlineRequest& request,
                                   std::chrono::milliseconds) override {
    std::lock_guard lock(mu_);
    settle_requests_.push_back({request.ack_ids_size(), request.ByteSizeLong()});
    for (const auto& id : request.ack_ids()) {
      if (request.ack_deadline_seconds() == 0) {
        nacked_.push_back(id);
      } else if (request.ack_deadline_seconds() == pubsub::Subscriber::kReleaseOnStopSeconds) {
        released_.push_back(id);
      } else {
        extended_.push_back(id);
        last_extension_seconds_ = request.ack_deadline_seconds();
      }
    }
    cv_.notify_all();
    return absl::OkStatus();
  }

  // Waits until `pred` holds over the recorded state (or the deadline); returns pred().
  template <typename Pred>
  bool wait_for(std::chrono::milliseconds timeout, Pred pred) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return pred(*this); });
  }

  // Recorded state; read under wait_for's predicate or after the threads stopped.
  // nacked_: deadline 0; released_: handed back by a stopping subscriber (its short deadline).
  std::vector<std::string> acked_, nacked_, released_, extended_;
  // Every unary Acknowledge / ModifyAckDeadline request: its id count and encoded size.
  struct SettleRequest {
    int ids = 0;
    std::size_t bytes = 0;
  };
  std::vector<SettleRequest> settle_requests_;
  int streams_opened_ = 0;
  int reads_waiting_ = 0;
  int last_extension_seconds_ = 0;
  std::optional<google::pubsub::v1::StreamingPullRequest> first_request_;
  std::size_t pending_responses() const { return responses_.size(); }

  void set_ack_status(absl::Status s) {
    std::lock_guard lock(mu_);
    ack_status_ = std::move(s);
  }
  void set_hang_acks(bool hang) {
    {
      std::lock_guard lock(mu_);
      hang_acks_ = hang;
    }
    cv_.notify_all();
  }
  std::string describe() {
    return fmt::format("acked={} nacked={} released={} extended={} streams={}", acked_.size(),
                       nacked_.size(), released_.size(), extended_.size(), streams_opened_);
  }
  std::mutex& mutex() { return mu_; }

 private:
  class Stream final : public pubsub::StreamingPullStream {
   public:
    Stream(FakeSubscriberStub* owner, int generation) : owner_(owner), generation_(generation) {}
    bool write(const google::pubsub::v1::StreamingPullRequest& request) override {
      std::lock_guard lock(owner_->mu_);
      if (!owner_->first_request_) owner_->first_request_ = request;
      // In-stream acknowledgements and deadline changes count like the unary ones.
      for (const auto& id : request.ack_ids()) owner_->acked_.push_back(id);
      for (int i = 0; i < request.modify_deadline_ack_ids_size(); ++i) {
        const int deadline =
            i < request.modify_deadline_seconds_size() ? request.modify_deadline_seconds(i) : 0;
        if (deadline == 0) {
          owner_->nacked_.push_back(request.modify_deadline_ack_ids(i));
        } else {
          owner_->extended_.push_back(request.modify_deadline_ack_ids(i));
        }
      }
      owner_->cv_.notify_all();
      return true;
    }
    bool read(google::pubsub::v1::StreamingPullResponse* response) override {
      std::unique_lock lock(owner_->mu_);
      ++owner_->reads_waiting_;
      owner_->cv_.notify_all();
      owner_->cv_.wait(lock, [&] {
        return cancelled_ || owner_->end_generation_ != generation_ || !owner_->responses_.empty();
      });
      --owner_->reads_waiting_;
      if (cancelled_) {
        status_ = absl::CancelledError("fake: cancelled");
        return false;
      }
      if (owner_->end_generation_ != generation_) {
        status_ = owner_->end_status_;
        return false;
      }
      *response = std::move(owner_->responses_.front());
      owner_->responses_.pop_front();
      return true;
    }
    void cancel() override {
      {
        std::lock_guard lock(owner_->mu_);
        cancelled_ = true;
      }
      owner_->cv_.notify_all();
    }
    absl::Status finish() override {
      std::lock_guard lock(owner_->mu_);
      return status_;
    }

   private:
    FakeSubscriberStub* owner_;
    int generation_;
    bool cancelled_ = false;
    absl::Status status_;
  };

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<google::pubsub::v1::StreamingPullResponse> responses_;
  absl::Status end_status_;
  int end_generation_ = 0;
  absl::Status ack_status_;
  bool hang_acks_ = false;
};

// Subscription administration in memory, recording the calls in order.
class FakeSubscriptionAdmin final : public pubsub::SubscriptionAdmin {
 public:
  absl::StatusOr<google::pubsub::v1::Subscription> get_subscription(
      const connector::SubscriptionDestination& sub) override {
    std::lock_guard lock(mu_);
    calls.push_back("get " + sub.subscription);
    if (!get_error.ok()) return get_error;
    auto it = subscriptions.find(sub.resource_name());
    if (it == subscriptions.end()) return absl::NotFoundError("fake: no such subscription");
    return it->second;
  }
  absl::StatusOr<bool> create_subscription(
      const connector::SubscriptionDestination& sub,
      const pubsub::SubscriptionCreateOptions& options) override {
    std::lock_guard lock(mu_);
    calls.push_back("create " + sub.subscription);
    auto [it, inserted] = subscriptions.emplace(sub.resource_name(), options.to_proto(sub));
    return inserted;
  }
  absl::Status seek_to_time(const connector::SubscriptionDestination& sub,
                            std::int64_t time_ms) override {
    std::lock_guard lock(mu_);
    calls.push_back(fmt::format("seek {} {}", sub.subscription, time_ms));
    return absl::OkStatus();
  }
  absl::Status seek_to_snapshot(const connector::SubscriptionDestination& sub,
                                const std::string& snapshot) override {
    std::lock_guard lock(mu_);
    calls.push_back("seek " + sub.subscription + " " + snapshot);
    return absl::OkStatus();
  }
  void put(const std::string& project, const std::string& id,
           std::function<void(google::pubsub::v1::Subscription&)> edit = nullptr) {
    google::pubsub::v1::Subscription s;
    s.set_name("projects/" + project + "/subscriptions/" + id);
    s.set_topic("projects/" + project + "/topics/t");
    if (edit) edit(s);
    std::lock_guard lock(mu_);
    subscriptions[s.name()] = s;
  }

  std::mutex mu_;
  std::map<std::string, google::pubsub::v1::Subscription> subscriptions;
  std::vector<std::string> calls;
  absl::Status get_error;
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_FAKE_SUBSCRIBER_H_
