#ifndef GCPSTREAM_CONNECTOR_REQUEST_BATCHER_H_
#define GCPSTREAM_CONNECTOR_REQUEST_BATCHER_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gcpstream/connector/recovery_backoff.h"
#include "gcpstream/connector/sink_outcome.h"
#include "gcpstream/util/scheduler.h"

namespace gcpstream::connector {

// What one attempt of a batched call answered: a verdict per element the service reported on
// (by index in the request), then the status of the call itself. Elements the call never
// reported have no verdict of their own. (MutateRows and BatchWrite both answer this way: a
// stream of per-entry or per-group statuses, then the call's status.)
struct BatchCallResult {
  std::vector<std::pair<std::int64_t, absl::Status>> entries;
  absl::Status rpc;
};

// How a RequestBatcher reaches one service: building a request, and sending it. Called by the
// batcher, under its lock except for send().
template <typename E, typename R>
class BatchService {
 public:
  virtual ~BatchService() = default;
  // A new, empty request (the destination and per-request fields filled in).
  virtual std::shared_ptr<R> new_request() = 0;
  virtual void append(R& request, E&& element) = 0;
  // Element `index` of a request, to be moved out.
  virtual E& element(R& request, std::size_t index) = 0;
  // One attempt. `done` runs exactly once, on an arbitrary thread. The request is shared; the
  // service may set per-attempt fields on it (a session) but never touches its elements, and
  // nothing else changes it until `done` ran. Returns a function that cancels the call (best
  // effort).
  virtual std::function<void()> send(std::shared_ptr<R> request, std::chrono::milliseconds timeout,
                                     std::function<void(BatchCallResult)> done) = 0;
  // The verdict of an element the call never reported on, when the call failed with `rpc`
  // (not OK). Default: `rpc` itself. A service whose request-level failures must be told apart
  // from an element's own refusal marks them here (keep the code: retries go by code).
  virtual absl::Status unreported(const absl::Status& rpc) { return rpc; }
};

// The retries of one logical batch: every attempt's timeout, and the delay before the next
// attempt (nullopt: give up). One instance per batch, created when it is first sent.
class BatchRetryPolicy {
 public:
  virtual ~BatchRetryPolicy() = default;
  virtual std::chrono::milliseconds attempt_timeout() = 0;
  virtual std::optional<std::chrono::milliseconds> next_delay() = 0;
};

// A fixed number of attempts, each bounded by the same timeout, with RecoveryBackoff's jittered
// exponential delays between them (RecoveryOptions::max_attempts counts the delays, so N
// attempts take N - 1).
class AttemptBudgetPolicy final : public BatchRetryPolicy {
 public:
  AttemptBudgetPolicy(RecoveryOptions options, std::chrono::milliseconds attempt_timeout,
                      std::function<double()> uniform01 = nullptr)
      : backoff_(options, std::move(uniform01)), attempt_timeout_(attempt_timeout) {}
  std::chrono::milliseconds attempt_timeout() override { return attempt_timeout_; }
  std::optional<std::chrono::milliseconds> next_delay() override { return backoff_.next(); }

 private:
  RecoveryBackoff backoff_;
  const std::chrono::milliseconds attempt_timeout_;
};

// When a request is sent, and how its elements are retried.
struct RequestBatcherSettings {
  // Sent once it holds this many elements.
  std::int64_t max_count = 100;
  // Bytes: sent once reached (bytes_is_cap false), or never exceeded by adding an element
  // (true): the element then starts the next request. An element larger than the cap alone
  // travels alone.
  std::int64_t max_bytes = 20LL * 1024 * 1024;
  bool bytes_is_cap = false;
  // Service units (Bigtable mutations, Spanner mutation cells): never exceeded by adding an
  // element, as above. 0: not counted.
  std::int64_t max_units = 0;
  // Sent once the oldest element waited this long; 0: only by size, flush() or solo.
  std::chrono::milliseconds delay{0};
  // Per-element verdicts with these codes are retried (the element joins the batch's next
  // attempt) while the policy allows; so are elements a failed call never reported on when
  // the call's status has one of these codes.
  std::set<absl::StatusCode> retryable_codes;
  std::function<std::unique_ptr<BatchRetryPolicy>()> retry_policy;
  // Called, under the batcher's lock, for every verdict about to be retried: cheap, must not
  // call back into the batcher. May be empty.
  std::function<void(const absl::Status&)> on_retry;
};

// Accumulates elements into requests of one service and sends them, any number in flight; a
// request's elements are reported to `listener` one by one (OK, or their final failure with the
// element handed back) exactly once. Retryable verdicts are re-sent, only those elements, after
// the policy's delay, as the same logical batch (its attempt count and budget carry over).
// Everything but shutdown() is non-blocking. Thread-safe. Create with std::make_shared (timers
// hold it weakly).
template <typename E, typename R>
class RequestBatcher : public std::enable_shared_from_this<RequestBatcher<E, R>> {
 public:
  // `cost(element)` returns {bytes, units} of an element.
  using Cost = std::function<std::pair<std::int64_t, std::int64_t>(const E&)>;

  RequestBatcher(std::shared_ptr<BatchService<E, R>> service, RequestBatcherSettings settings,
                 Cost cost, std::shared_ptr<util::Scheduler> timers,
                 std::shared_ptr<SinkOutcomeListener<E>> listener)
      : service_(std::move(service)),
        settings_(std::move(settings)),
        cost_(std::move(cost)),
        timers_(std::move(timers)),
        listener_(std::move(listener)) {}

  ~RequestBatcher() {
    if (timer_) timer_->cancel();
  }

  void add(E&& element, std::uint64_t token) { add_impl(std::move(element), token, false); }
  // The element travels alone in its own request.
  void add_solo(E&& element, std::uint64_t token) { add_impl(std::move(element), token, true); }

  // Sends what is accumulated now.
  void flush() {
    Later later;
    {
      std::lock_guard lock(mu_);
      close_open_locked(later);
    }
    run(later);
  }

  // Fails what is accumulated or waiting for a retry with CANCELLED, cancels the calls in
  // flight, and returns once every outcome was delivered. Later add() calls fail with CANCELLED.
  absl::Status shutdown() {
    Later later;
    std::vector<std::function<void()>> cancels;
    {
      std::lock_guard lock(mu_);
      shut_down_ = true;
      if (timer_) {
        timer_->cancel();
        timer_.reset();
      }
      if (open_) fail_locked(*open_, later);
      open_.reset();
      for (auto& [key, timer] : retry_timers_) timer->cancel();
      retry_timers_.clear();
      for (auto& [key, batch] : waiting_retry_) {
        fail_locked(*batch, later);
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

  // Bytes and units of the request being filled (not yet sent). Thread-safe.
  std::pair<std::int64_t, std::int64_t> open_load() const {
    std::lock_guard lock(mu_);
    if (!open_) return {0, 0};
    return {open_->bytes, open_->units};
  }

  // Elements waiting out a retry delay (not on the wire). Thread-safe.
  std::int64_t waiting_retry() const {
    std::lock_guard lock(mu_);
    std::int64_t n = 0;
    for (const auto& [key, batch] : waiting_retry_) {
      n += static_cast<std::int64_t>(batch->tokens.size());
    }
    return n;
  }

 private:
  struct Batch {
    std::shared_ptr<R> request;
    std::vector<std::uint64_t> tokens;
    std::int64_t bytes = 0;
    std::int64_t units = 0;
    std::unique_ptr<BatchRetryPolicy> policy;  // set at the first attempt
  };
  struct Later {
    std::vector<std::function<void()>> calls;
    std::vector<SinkOutcome<E>> outcomes;
    std::shared_ptr<void> spent;
  };

  void run(Later& later) {
    for (auto& c : later.calls) c();
    later.calls.clear();
    if (!later.outcomes.empty() || later.spent) {
      listener_->on_outcomes(std::move(later.outcomes), std::move(later.spent));
      later.outcomes.clear();
      later.spent.reset();
    }
  }

  std::shared_ptr<Batch> new_batch_locked() {
    auto batch = std::make_shared<Batch>();
    batch->request = service_->new_request();
    return batch;
  }

  void fail_locked(Batch& batch, Later& later) {
    const absl::Status cancelled = absl::CancelledError("the batcher is shut down");
    for (std::size_t i = 0; i < batch.tokens.size(); ++i) {
      later.outcomes.push_back(
          {batch.tokens[i], cancelled, std::move(service_->element(*batch.request, i))});
    }
    batch.tokens.clear();
  }

  void add_impl(E&& element, std::uint64_t token, bool solo) {
    Later later;
    {
      std::lock_guard lock(mu_);
      if (shut_down_) {
        later.outcomes.push_back(
            {token, absl::CancelledError("the batcher is shut down"), std::move(element)});
      } else {
        const auto [bytes, units] = cost_(element);
        if (solo) close_open_locked(later);
        // Close first when this element would carry the request past a cap.
        if (open_ && !open_->tokens.empty()) {
          const bool units_over =
              settings_.max_units > 0 && open_->units + units > settings_.max_units;
          const bool bytes_over =
              settings_.bytes_is_cap && open_->bytes + bytes > settings_.max_bytes;
          if (units_over || bytes_over) close_open_locked(later);
        }
        if (!open_) {
          open_ = new_batch_locked();
          open_since_ = timers_->now();
        }
        open_->bytes += bytes;
        open_->units += units;
        service_->append(*open_->request, std::move(element));
        open_->tokens.push_back(token);
        if (solo || static_cast<std::int64_t>(open_->tokens.size()) >= settings_.max_count ||
            open_->bytes >= settings_.max_bytes ||
            (settings_.max_units > 0 && open_->units >= settings_.max_units)) {
          close_open_locked(later);
        } else {
          arm_timer_locked();
        }
      }
    }
    run(later);
  }

  void arm_timer_locked() {
    if (timer_ || settings_.delay.count() <= 0) return;
    std::weak_ptr<RequestBatcher> weak = this->weak_from_this();
    const auto since = open_since_;
    timer_ = timers_->schedule(since + settings_.delay, [weak, since] {
      auto self = weak.lock();
      if (!self) return;
      Later later;
      {
        std::lock_guard lock(self->mu_);
        self->timer_.reset();
        if (self->shut_down_ || !self->open_) return;
        // Only the batch that has waited the whole delay goes; a younger one re-arms.
        if (self->open_since_ == since) {
          self->close_open_locked(later);
        } else {
          self->arm_timer_locked();
        }
      }
      self->run(later);
    });
  }

  void close_open_locked(Later& later) {
    if (!open_ || open_->tokens.empty()) return;
    auto batch = std::move(open_);
    open_.reset();
    send_locked(std::move(batch), later);
  }

  void send_locked(std::shared_ptr<Batch> batch, Later& later) {
    if (!batch->policy) {
      ++outstanding_;
      batch->policy = settings_.retry_policy();
    }
    const auto timeout = std::max(std::chrono::milliseconds(1), batch->policy->attempt_timeout());
    std::shared_ptr<R> request = batch->request;
    const std::uint64_t id = next_call_++;
    // Only sent_ owns the batch while it is on the wire (the service shares the request only),
    // so on_result can hand it to the listener whole.
    sent_[id] = std::move(batch);
    auto self = this->shared_from_this();
    later.calls.push_back([self, id, request = std::move(request), timeout]() mutable {
      auto cancel = self->service_->send(
          std::move(request), timeout,
          [self, id](BatchCallResult result) { self->on_result(id, std::move(result)); });
      bool cancel_now = false;
      {
        std::lock_guard lock(self->mu_);
        if (self->sent_.count(id) > 0) {
          self->in_flight_[id] = cancel;
          // shutdown() already cancelled what was in flight: this call started after it.
          cancel_now = self->shut_down_;
        }
      }
      if (cancel_now && cancel) cancel();
    });
  }

  void on_result(std::uint64_t call, BatchCallResult result) {
    Later later;
    {
      std::lock_guard lock(mu_);
      in_flight_.erase(call);
      auto sent = sent_.find(call);
      if (sent == sent_.end()) return;
      std::shared_ptr<Batch> batch = std::move(sent->second);
      sent_.erase(sent);
      const std::size_t n = batch->tokens.size();
      // Every element's verdict: its own if reported, else the call's (an element a successful
      // call never reported on is treated as an outage and retried).
      std::vector<absl::Status> verdict(
          n, result.rpc.ok()
                 ? absl::UnavailableError("the call ended without reporting the element")
                 : service_->unreported(result.rpc));
      for (const auto& [index, status] : result.entries) {
        if (index >= 0 && static_cast<std::size_t>(index) < n) {
          verdict[static_cast<std::size_t>(index)] = status;
        }
      }
      bool any_retryable = false;
      for (const auto& s : verdict) {
        any_retryable |= !s.ok() && settings_.retryable_codes.count(s.code()) > 0;
      }
      std::optional<std::chrono::milliseconds> delay;
      if (any_retryable && !shut_down_) delay = batch->policy->next_delay();
      std::shared_ptr<Batch> retry;
      for (std::size_t i = 0; i < n; ++i) {
        const absl::Status& s = verdict[i];
        if (s.ok()) {
          later.outcomes.push_back({batch->tokens[i], absl::OkStatus(), std::nullopt});
          continue;
        }
        E& element = service_->element(*batch->request, i);
        if (delay && settings_.retryable_codes.count(s.code()) > 0) {
          if (settings_.on_retry) settings_.on_retry(s);
          if (!retry) retry = new_batch_locked();
          const auto [bytes, units] = cost_(element);
          retry->bytes += bytes;
          retry->units += units;
          service_->append(*retry->request, std::move(element));
          retry->tokens.push_back(batch->tokens[i]);
          continue;
        }
        later.outcomes.push_back({batch->tokens[i], s, std::move(element)});
      }
      if (!retry) {
        --outstanding_;
        if (outstanding_ == 0) idle_.notify_all();
      } else {
        // The same logical batch, fewer elements: keeps its policy (attempts, deadline).
        retry->policy = std::move(batch->policy);
        waiting_retry_[retry.get()] = retry;
        std::weak_ptr<RequestBatcher> weak = this->weak_from_this();
        Batch* key = retry.get();
        retry_timers_[key] = timers_->schedule(timers_->now() + *delay, [weak, key] {
          auto self = weak.lock();
          if (!self) return;
          Later l;
          {
            std::lock_guard lock(self->mu_);
            self->retry_timers_.erase(key);
            auto it = self->waiting_retry_.find(key);
            if (it == self->waiting_retry_.end()) return;  // failed by shutdown()
            auto b = std::move(it->second);
            self->waiting_retry_.erase(it);
            self->send_locked(std::move(b), l);
          }
          self->run(l);
        });
      }
      // What was not moved out goes back to the listener's thread to be freed there.
      later.spent = std::move(batch);
    }
    run(later);
  }

  std::shared_ptr<BatchService<E, R>> service_;
  const RequestBatcherSettings settings_;
  Cost cost_;
  std::shared_ptr<util::Scheduler> timers_;
  std::shared_ptr<SinkOutcomeListener<E>> listener_;

  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::shared_ptr<Batch> open_;
  std::chrono::steady_clock::time_point open_since_;
  std::map<std::uint64_t, std::function<void()>> in_flight_;
  // Requests on the wire, by call id.
  std::map<std::uint64_t, std::shared_ptr<Batch>> sent_;
  std::map<Batch*, std::shared_ptr<Batch>> waiting_retry_;
  std::map<Batch*, std::shared_ptr<util::TimerHandle>> retry_timers_;
  std::uint64_t next_call_ = 0;
  int outstanding_ = 0;
  std::shared_ptr<util::TimerHandle> timer_;
  bool shut_down_ = false;
};

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_REQUEST_BATCHER_H_
