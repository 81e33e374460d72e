#include "gcpstream/bigtable/client/bulk_mutation_batcher.h"

#include <fmt/format.h>

#include <algorithm>

#include "gcpstream/bigtable/client/row_mutation_entry.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::bigtable {

absl::Status BatchingThresholds::validate() const {
  if (element_count < 1 || element_count > kMaxElementCount) {
    return absl::InvalidArgumentError(fmt::format(
        "batch_element_count must be in 1..{} (the Bigtable client refuses thresholds at or "
        "above its own flow-control budget of 20,000 entries)",
        kMaxElementCount));
  }
  if (byte_size < 1 || byte_size > kMaxByteSize) {
    return absl::InvalidArgumentError(fmt::format(
        "batch_byte_size must be in 1..{} (one byte under the Bigtable client's 100 MiB "
        "flow-control budget)",
        kMaxByteSize));
  }
  if (delay.count() <= 0) return absl::InvalidArgumentError("batch delay must be positive");
  return absl::OkStatus();
}

BulkMutationBatcher::BulkMutationBatcher(std::string table_name, std::string app_profile_id,
                                         std::shared_ptr<BigtableDataStub> stub,
                                         BatchingThresholds thresholds,
                                         MutateRowsRetrySettings retry,
                                         std::shared_ptr<util::TimerThread> timers,
                                         std::shared_ptr<MutationListener> listener)
    : table_name_(std::move(table_name)),
      app_profile_id_(std::move(app_profile_id)),
      stub_(std::move(stub)),
      thresholds_(thresholds),
      retry_(std::move(retry)),
      timers_(std::move(timers)),
      listener_(std::move(listener)) {}

BulkMutationBatcher::~BulkMutationBatcher() {
  if (timer_) timer_->cancel();
}

void BulkMutationBatcher::run(Later& later) {
  for (auto& c : later.calls) c();
  later.calls.clear();
  if (!later.outcomes.empty() || later.spent) {
    listener_->on_outcomes(std::move(later.outcomes), std::move(later.spent));
    later.outcomes.clear();
    later.spent.reset();
  }
}

std::shared_ptr<BulkMutationBatcher::Batch> BulkMutationBatcher::new_batch_locked() {
  auto batch = std::make_shared<Batch>();
  batch->request = std::make_shared<google::bigtable::v2::MutateRowsRequest>();
  batch->request->set_table_name(table_name_);
  if (!app_profile_id_.empty()) batch->request->set_app_profile_id(app_profile_id_);
  return batch;
}

void BulkMutationBatcher::add(Entry&& entry, std::uint64_t token) {
  add_impl(std::move(entry), token, /*solo=*/false);
}

void BulkMutationBatcher::add_solo(Entry&& entry, std::uint64_t token) {
  add_impl(std::move(entry), token, /*solo=*/true);
}

void BulkMutationBatcher::add_impl(Entry&& entry, std::uint64_t token, bool solo) {
  Later later;
  {
    std::lock_guard lock(mu_);
    if (shut_down_) {
      later.outcomes.push_back(
          {token, absl::CancelledError("the batcher is shut down"), std::move(entry)});
    } else {
      const std::int64_t bytes = static_cast<std::int64_t>(entry.ByteSizeLong());
      const std::int64_t mutations = entry.mutations_size();
      if (solo) close_open_locked(later);
      // Flush first when this entry would carry the request past the mutation limit.
      if (open_ && open_->mutations + mutations > kMaxMutationsPerRequest) {
        close_open_locked(later);
      }
      if (!open_) {
        open_ = new_batch_locked();
        open_since_ = std::chrono::steady_clock::now();
      }
      open_->bytes += bytes;
      open_->mutations += mutations;
      *open_->request->add_entries() = std::move(entry);
      open_->tokens.push_back(token);
      if (solo || static_cast<std::int64_t>(open_->tokens.size()) >= thresholds_.element_count ||
          open_->bytes >= thresholds_.byte_size) {
        close_open_locked(later);
      } else {
        arm_timer_locked();
      }
    }
  }
  run(later);
}

void BulkMutationBatcher::arm_timer_locked() {
  if (timer_) return;
  std::weak_ptr<BulkMutationBatcher> weak = weak_from_this();
  const auto since = open_since_;
  timer_ = timers_->schedule(since + thresholds_.delay, [weak, since] {
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

void BulkMutationBatcher::close_open_locked(Later& later) {
  if (!open_ || open_->tokens.empty()) return;
  auto batch = std::move(open_);
  open_.reset();
  send_locked(std::move(batch), later);
}

void BulkMutationBatcher::flush() {
  Later later;
  {
    std::lock_guard lock(mu_);
    close_open_locked(later);
  }
  run(later);
}

void BulkMutationBatcher::send_locked(std::shared_ptr<Batch> batch, Later& later) {
  if (batch->attempts == 0) {
    ++outstanding_;
    batch->first_attempt = std::chrono::steady_clock::now();
    batch->next_delay = retry_.initial_delay;
  }
  ++batch->attempts;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      batch->first_attempt + retry_.total_timeout - std::chrono::steady_clock::now());
  const auto timeout =
      std::max(std::chrono::milliseconds(1), std::min(retry_.attempt_timeout, left));
  std::shared_ptr<const google::bigtable::v2::MutateRowsRequest> request = batch->request;
  const std::uint64_t id = next_call_++;
  // Only sent_ owns the batch while it is on the wire (the stub shares the request only), so
  // on_result can hand it to the listener whole.
  sent_[id] = std::move(batch);
  auto self = shared_from_this();
  later.calls.push_back([self, id, request = std::move(request), timeout]() mutable {
    auto cancel = self->stub_->async_mutate_rows(
        std::move(request), timeout,
        [self, id](MutateRowsResult result) { self->on_result(id, std::move(result)); });
    std::lock_guard lock(self->mu_);
    if (self->sent_.count(id) > 0) self->in_flight_[id] = std::move(cancel);
  });
}

void BulkMutationBatcher::on_result(std::uint64_t call, MutateRowsResult result) {
  Later later;
  {
    std::lock_guard lock(mu_);
    in_flight_.erase(call);
    auto sent = sent_.find(call);
    if (sent == sent_.end()) return;
    std::shared_ptr<Batch> batch = std::move(sent->second);
    sent_.erase(sent);
    const std::size_t n = batch->tokens.size();
    // Every entry's verdict: its own status if reported, else the call's (an entry the stream
    // never reported on a successful call is treated as an outage and retried).
    std::vector<absl::Status> verdict(
        n, result.rpc.ok() ? absl::UnavailableError("MutateRows ended without reporting the entry")
                           : result.rpc);
    for (const auto& [index, status] : result.entries) {
      if (index >= 0 && static_cast<std::size_t>(index) < n) {
        verdict[static_cast<std::size_t>(index)] = status;
      }
    }
    const auto elapsed = std::chrono::steady_clock::now() - batch->first_attempt;
    const bool time_left = elapsed + batch->next_delay < retry_.total_timeout;
    std::shared_ptr<Batch> retry;
    auto* entries = batch->request->mutable_entries();
    for (std::size_t i = 0; i < n; ++i) {
      const absl::Status& s = verdict[i];
      if (s.ok()) {
        later.outcomes.push_back({batch->tokens[i], absl::OkStatus(), std::nullopt});
        continue;
      }
      Entry& entry = *entries->Mutable(static_cast<int>(i));
      if (retry_.retryable_codes.count(s.code()) > 0 && time_left && !shut_down_) {
        if (!retry) retry = new_batch_locked();
        retry->bytes += static_cast<std::int64_t>(entry.ByteSizeLong());
        retry->mutations += entry.mutations_size();
        *retry->request->add_entries() = std::move(entry);
        retry->tokens.push_back(batch->tokens[i]);
        continue;
      }
      later.outcomes.push_back({batch->tokens[i], s, std::move(entry)});
    }
    if (!retry) {
      --outstanding_;
      if (outstanding_ == 0) idle_.notify_all();
    } else {
      // The same logical batch, fewer entries: keeps its attempt count and deadline.
      retry->attempts = batch->attempts;
      retry->first_attempt = batch->first_attempt;
      const auto delay = batch->next_delay;
      retry->next_delay =
          std::min(retry_.max_delay, std::chrono::milliseconds(static_cast<std::int64_t>(
                                         static_cast<double>(delay.count()) * retry_.multiplier)));
      waiting_retry_[retry.get()] = retry;
      std::weak_ptr<BulkMutationBatcher> weak = weak_from_this();
      Batch* key = retry.get();
      retry_timers_[key] = timers_->schedule(std::chrono::steady_clock::now() + delay, [weak, key] {
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

absl::Status BulkMutationBatcher::shutdown() {
  Later later;
  std::vector<std::function<void()>> cancels;
  {
    std::lock_guard lock(mu_);
    shut_down_ = true;
    if (timer_) {
      timer_->cancel();
      timer_.reset();
    }
    const absl::Status cancelled = absl::CancelledError("the batcher is shut down");
    auto fail = [&](Batch& batch) {
      auto* entries = batch.request->mutable_entries();
      for (std::size_t i = 0; i < batch.tokens.size(); ++i) {
        later.outcomes.push_back(
            {batch.tokens[i], cancelled, std::move(*entries->Mutable(static_cast<int>(i)))});
      }
      batch.tokens.clear();
    };
    if (open_) fail(*open_);
    open_.reset();
    for (auto& [key, timer] : retry_timers_) timer->cancel();
    retry_timers_.clear();
    for (auto& [key, batch] : waiting_retry_) {
      fail(*batch);
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

}  // namespace gcpstream::bigtable
