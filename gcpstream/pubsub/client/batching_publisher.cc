#include "gcpstream/pubsub/client/batching_publisher.h"

#include <fmt/format.h>

#include <algorithm>

#include "absl/strings/cord.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::pubsub {

namespace {
constexpr char kPausedUrl[] = "type.gcpstream.dev/pubsub-ordering-key-paused";
// Per-message overhead of a request beyond the message itself (field tag and length).
constexpr std::size_t kMessageOverhead = 8;
}  // namespace

absl::Status OrderingKeyPausedError(const std::string& ordering_key) {
  absl::Status s = absl::CancelledError(fmt::format(
      "ordering key '{}' is paused after an earlier publish of the key failed", ordering_key));
  s.SetPayload(kPausedUrl, absl::Cord(ordering_key));
  return s;
}

bool IsOrderingKeyPaused(const absl::Status& status) {
  return status.GetPayload(kPausedUrl).has_value();
}

BatchingPublisher::BatchingPublisher(std::string topic_name, std::shared_ptr<PublisherStub> stub,
                                     PublisherSettings settings,
                                     std::shared_ptr<util::TimerThread> timers,
                                     std::shared_ptr<PublishListener> listener)
    : topic_(std::move(topic_name)),
      stub_(std::move(stub)),
      settings_(std::move(settings)),
      timers_(std::move(timers)),
      listener_(std::move(listener)) {}

BatchingPublisher::~BatchingPublisher() {
  if (timer_) timer_->cancel();
}

void BatchingPublisher::run(Callbacks& later) {
  for (auto& c : later.calls) c();
  later.calls.clear();
  if (!later.outcomes.empty() || !later.retired.empty()) {
    listener_->on_published(std::move(later.outcomes), std::move(later.retired));
    later.outcomes.clear();
    later.retired.Clear();
  }
}

void BatchingPublisher::publish(Message&& message, std::uint64_t token) {
  add(std::move(message), token, /*solo=*/false);
}

void BatchingPublisher::publish_solo(Message&& message, std::uint64_t token) {
  add(std::move(message), token, /*solo=*/true);
}

void BatchingPublisher::add(Message&& message, std::uint64_t token, bool solo) {
  Callbacks later;
  {
    std::lock_guard lock(mu_);
    auto refuse = [&](absl::Status status) {
      later.outcomes.push_back({token, std::move(status), std::move(message)});
    };
    if (shut_down_) {
      refuse(absl::CancelledError("the publisher is shut down"));
    } else if (!message.ordering_key().empty() && !settings_.enable_message_ordering) {
      refuse(absl::FailedPreconditionError(
          "a message has an ordering key but message ordering is not enabled"));
    } else {
      const std::string key = message.ordering_key();
      KeyState& state = keys_[key];
      if (state.paused) {
        refuse(OrderingKeyPausedError(key));
      } else {
        const std::size_t bytes = message.ByteSizeLong() + kMessageOverhead;
        const auto& b = settings_.batching;
        if (solo) close_open_locked(key, later);
        if (state.open &&
            state.open->bytes + bytes > static_cast<std::size_t>(b.request_byte_threshold)) {
          close_open_locked(key, later);  // it would not fit: send what is there first
        }
        if (!state.open) {
          state.open = std::make_shared<Batch>();
          state.open->key = key;
          state.open->created = std::chrono::steady_clock::now();
          state.open->request = std::make_shared<google::pubsub::v1::PublishRequest>();
          state.open->request->set_topic(topic_);
        }
        Batch& open = *state.open;
        open.bytes += bytes;
        *open.request->add_messages() = std::move(message);
        open.tokens.push_back(token);
        if (solo || open.size() >= static_cast<std::size_t>(b.element_count_threshold) ||
            open.bytes >= static_cast<std::size_t>(b.request_byte_threshold)) {
          close_open_locked(key, later);
        } else {
          arm_timer_locked();
        }
      }
    }
  }
  run(later);
}

// One timer, due when the oldest open batch has waited delay_threshold. It closes only the
// batches that are due (a batch that filled and left meanwhile is not followed by a premature
// send of its successor), then re-arms for the next one.
void BatchingPublisher::arm_timer_locked() {
  std::optional<std::chrono::steady_clock::time_point> due;
  for (const auto& [key, state] : keys_) {
    if (state.open && !state.open->tokens.empty()) {
      const auto t = state.open->created + settings_.batching.delay_threshold;
      if (!due || t < *due) due = t;
    }
  }
  if (!due) return;
  if (timer_ && timer_due_ <= *due) return;  // an earlier timer will re-arm
  if (timer_) timer_->cancel();
  timer_due_ = *due;
  std::weak_ptr<BatchingPublisher> weak = weak_from_this();
  timer_ = timers_->schedule(*due, [weak] {
    auto self = weak.lock();
    if (!self) return;
    Callbacks later;
    {
      std::lock_guard lock(self->mu_);
      self->timer_.reset();
      if (self->shut_down_) return;
      const auto now = std::chrono::steady_clock::now();
      std::vector<std::string> due_keys;
      for (const auto& [key, state] : self->keys_) {
        if (state.open && !state.open->tokens.empty() &&
            state.open->created + self->settings_.batching.delay_threshold <= now) {
          due_keys.push_back(key);
        }
      }
      for (const auto& key : due_keys) self->close_open_locked(key, later);
      self->arm_timer_locked();
    }
    self->run(later);
  });
}

void BatchingPublisher::close_open_locked(const std::string& key, Callbacks& later) {
  KeyState& state = keys_[key];
  if (!state.open || state.open->tokens.empty()) return;
  state.closed.push_back(std::move(state.open));
  state.open.reset();
  pump_key_locked(key, later);
}

void BatchingPublisher::pump_key_locked(const std::string& key, Callbacks& later) {
  KeyState& state = keys_[key];
  if (key.empty()) {
    // Unordered: every closed batch goes out at once.
    while (!state.closed.empty()) {
      auto batch = std::move(state.closed.front());
      state.closed.pop_front();
      send_locked(std::move(batch), later);
    }
    return;
  }
  // Ordered: one batch of a key in flight at a time.
  if (state.in_flight || state.paused || state.closed.empty()) return;
  auto batch = std::move(state.closed.front());
  state.closed.pop_front();
  state.in_flight = true;
  send_locked(std::move(batch), later);
}

void BatchingPublisher::flush() {
  Callbacks later;
  {
    std::lock_guard lock(mu_);
    if (timer_) {
      timer_->cancel();
      timer_.reset();
    }
    for (auto& [key, state] : keys_) close_open_locked(key, later);
  }
  run(later);
}

void BatchingPublisher::send_locked(std::shared_ptr<Batch> batch, Callbacks& later) {
  const auto& r = settings_.retry;
  if (batch->attempts == 0) {
    ++outstanding_;
    batch->first_attempt = std::chrono::steady_clock::now();
    batch->next_delay = r.initial_retry_delay;
    batch->next_rpc_timeout = r.initial_rpc_timeout;
  }
  ++batch->attempts;
  std::chrono::milliseconds timeout = batch->next_rpc_timeout;
  if (!r.unbounded && r.total_timeout.count() > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        batch->first_attempt + r.total_timeout - std::chrono::steady_clock::now());
    timeout = std::max(std::chrono::milliseconds(1), std::min(timeout, left));
  }
  batch->next_rpc_timeout = std::min(
      r.max_rpc_timeout,
      std::chrono::milliseconds(static_cast<std::int64_t>(
          static_cast<double>(batch->next_rpc_timeout.count()) * r.rpc_timeout_multiplier)));
  std::shared_ptr<const google::pubsub::v1::PublishRequest> request = batch->request;
  const std::uint64_t id = next_call_++;
  auto self = shared_from_this();
  // The RPC starts after the lock is released (its callback may run inline on failure).
  later.calls.push_back([self, batch, id, request = std::move(request), timeout]() mutable {
    auto cancel = self->stub_->async_publish(
        std::move(request), timeout,
        [self, batch, id](absl::StatusOr<google::pubsub::v1::PublishResponse> result) {
          self->on_result(batch, id, std::move(result));
        });
    std::lock_guard lock(self->mu_);
    // The call may already have completed (and removed nothing): only track live ones.
    if (self->live_calls_.count(id) > 0) self->in_flight_[id] = std::move(cancel);
  });
  live_calls_.insert(id);
}

// Fails every message of `batch` (which must not be in flight), handing each message back.
void BatchingPublisher::fail_batch(Batch& batch, const absl::Status& status, Callbacks& later) {
  auto* messages = batch.request->mutable_messages();
  for (std::size_t i = 0; i < batch.tokens.size(); ++i) {
    later.outcomes.push_back(
        {batch.tokens[i], status, std::move(*messages->Mutable(static_cast<int>(i)))});
  }
  batch.tokens.clear();
  batch.request->clear_messages();
}

void BatchingPublisher::on_result(std::shared_ptr<Batch> batch, std::uint64_t call_id,
                                  absl::StatusOr<google::pubsub::v1::PublishResponse> result) {
  Callbacks later;
  {
    std::lock_guard lock(mu_);
    in_flight_.erase(call_id);
    live_calls_.erase(call_id);
    const auto& r = settings_.retry;
    if (result.ok() && result->message_ids_size() != static_cast<int>(batch->size())) {
      result = absl::InternalError(fmt::format("Publish answered {} message ids for {} messages",
                                               result->message_ids_size(), batch->size()));
    }
    bool done_with_batch = true;
    if (result.ok()) {
      later.outcomes.reserve(batch->size());
      for (std::size_t i = 0; i < batch->size(); ++i) {
        later.outcomes.push_back({batch->tokens[i],
                                  std::move(*result->mutable_message_ids(static_cast<int>(i))),
                                  std::nullopt});
      }
      // The call is over, so the request is ours again: its messages go back to the listener
      // (an O(1) swap) to be freed by the thread that allocated them.
      later.retired.Swap(batch->request->mutable_messages());
    } else {
      const absl::Status status = result.status();
      const bool retryable = r.retryable_codes.count(status.code()) > 0;
      const auto elapsed = std::chrono::steady_clock::now() - batch->first_attempt;
      const bool attempts_left =
          r.unbounded || r.max_attempts == 0 || batch->attempts < r.max_attempts;
      const bool time_left = r.unbounded || r.total_timeout.count() == 0 ||
                             elapsed + batch->next_delay < r.total_timeout;
      if (retryable && attempts_left && time_left && !shut_down_) {
        done_with_batch = false;
        const auto delay = batch->next_delay;
        batch->next_delay = std::min(
            r.max_retry_delay,
            std::chrono::milliseconds(static_cast<std::int64_t>(
                static_cast<double>(batch->next_delay.count()) * r.retry_delay_multiplier)));
        std::weak_ptr<BatchingPublisher> weak = weak_from_this();
        retry_timers_[call_id] =
            timers_->schedule(std::chrono::steady_clock::now() + delay, [weak, batch, call_id] {
              auto self = weak.lock();
              if (!self) return;
              Callbacks cbs;
              {
                std::lock_guard lock(self->mu_);
                self->retry_timers_.erase(call_id);
                if (self->shut_down_) return;  // shutdown() failed it already
                self->waiting_retry_.erase(batch.get());
                self->send_locked(batch, cbs);
              }
              self->run(cbs);
            });
        waiting_retry_[batch.get()] = batch;
      } else {
        fail_batch(*batch, status, later);
        if (!batch->key.empty()) {
          // A failed key stays paused until resume_publish(); what waits behind it fails too.
          KeyState& state = keys_[batch->key];
          state.paused = true;
          const absl::Status paused = OrderingKeyPausedError(batch->key);
          for (auto& queued : state.closed) fail_batch(*queued, paused, later);
          state.closed.clear();
          if (state.open) {
            fail_batch(*state.open, paused, later);
            state.open.reset();
          }
        }
      }
    }
    if (done_with_batch) {
      --outstanding_;
      if (!batch->key.empty()) {
        KeyState& state = keys_[batch->key];
        state.in_flight = false;
        pump_key_locked(batch->key, later);
      }
      if (outstanding_ == 0) idle_.notify_all();
    }
  }
  run(later);
}

void BatchingPublisher::resume_publish(const std::string& ordering_key) {
  Callbacks later;
  {
    std::lock_guard lock(mu_);
    auto it = keys_.find(ordering_key);
    if (it == keys_.end() || !it->second.paused) return;
    it->second.paused = false;
    pump_key_locked(ordering_key, later);
  }
  run(later);
}

absl::Status BatchingPublisher::shutdown() {
  Callbacks later;
  std::vector<std::function<void()>> cancels;
  {
    std::lock_guard lock(mu_);
    shut_down_ = true;
    if (timer_) {
      timer_->cancel();
      timer_.reset();
    }
    const absl::Status cancelled = absl::CancelledError("the publisher is shut down");
    for (auto& [key, state] : keys_) {
      for (auto& b : state.closed) fail_batch(*b, cancelled, later);
      state.closed.clear();
      if (state.open) fail_batch(*state.open, cancelled, later);
      state.open.reset();
    }
    for (auto& [id, timer] : retry_timers_) timer->cancel();
    retry_timers_.clear();
    for (auto& [raw, batch] : waiting_retry_) {
      fail_batch(*batch, cancelled, later);
      --outstanding_;
    }
    waiting_retry_.clear();
    for (auto& [id, cancel] : in_flight_) cancels.push_back(cancel);
  }
  run(later);
  for (auto& c : cancels) {
    if (c) c();
  }
  std::unique_lock lock(mu_);
  idle_.wait(lock, [&] { return outstanding_ <= 0; });
  return absl::OkStatus();
}

BatchingPublisherFactory::BatchingPublisherFactory(std::shared_ptr<PublisherStub> stub,
                                                   PublisherSettings settings)
    : stub_(std::move(stub)),
      settings_(std::move(settings)),
      timers_(std::make_shared<util::TimerThread>()) {}

absl::StatusOr<std::shared_ptr<Publisher>> BatchingPublisherFactory::create(
    const connector::TopicDestination& topic, std::shared_ptr<PublishListener> listener) {
  return std::shared_ptr<Publisher>(std::make_shared<BatchingPublisher>(
      topic.resource_name(), stub_, settings_, timers_, std::move(listener)));
}

}  // namespace gcpstream::pubsub
