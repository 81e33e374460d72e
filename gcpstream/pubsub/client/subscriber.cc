#include "gcpstream/pubsub/client/subscriber.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>
#include <utility>

#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::pubsub {
namespace {

using Clock = std::chrono::steady_clock;

// Google's clients cap one Acknowledge / ModifyAckDeadline request at 2,500 ids.
constexpr std::size_t kMaxIdsPerRequest = 2500;
// Ack ids have no documented length bound (they exceed 200 bytes in production), so a request
// is also cut by encoded size: the service refuses Acknowledge / ModifyAckDeadline requests over
// 512 KiB (Google's Go client cuts at the same figure). The budget keeps room for the
// subscription name and the deadline field.
constexpr std::size_t kMaxSettleRequestBytes = 512 * 1024;
constexpr std::size_t kSettleRequestBudget = kMaxSettleRequestBytes - 16 * 1024;

// What one id adds to a request's repeated ack_ids field: tag, length varint, bytes.
std::size_t EncodedIdBytes(const std::string& id) {
  std::size_t varint = 1;
  for (std::size_t n = id.size(); n >= 0x80; n >>= 7) ++varint;
  return 1 + varint + id.size();
}

// Cuts ids into requests of at most kMaxIdsPerRequest ids and kSettleRequestBudget bytes.
class RequestCutter {
 public:
  // Whether `id` still fits in the request being filled (an empty request takes any id).
  bool fits(int ids_so_far, const std::string& id) const {
    if (ids_so_far == 0) return true;
    return static_cast<std::size_t>(ids_so_far) < kMaxIdsPerRequest &&
           bytes_ + EncodedIdBytes(id) <= kSettleRequestBudget;
  }
  void add(const std::string& id) { bytes_ += EncodedIdBytes(id); }
  void reset() { bytes_ = 0; }

 private:
  std::size_t bytes_ = 0;
};

// Moves ids into ModifyAckDeadline requests cut by RequestCutter.
void AppendCut(std::vector<google::pubsub::v1::ModifyAckDeadlineRequest>& requests,
               RequestCutter& cutter, std::string id) {
  if (requests.empty() || !cutter.fits(requests.back().ack_ids_size(), id)) {
    requests.emplace_back();
    cutter.reset();
  }
  cutter.add(id);
  requests.back().add_ack_ids(std::move(id));
}
// The adaptive extension's range (Google's clients: 10 s .. 600 s, the service's maximum
// acknowledgement deadline).
constexpr std::int64_t kMinExtensionSeconds = 10;
constexpr std::int64_t kMaxExtensionSeconds = 600;
constexpr auto kLeaseTick = std::chrono::seconds(1);

bool IsRetryableStreamCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:  // the service closed the stream: reopen it
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kCancelled:
      return true;
    default:
      return false;
  }
}

}  // namespace

// Completion of one ack() call that asked for confirmation: done runs when every id was answered.
struct AckWaiter {
  std::mutex mu;
  std::size_t remaining = 0;
  absl::Status first_error;
  std::function<void(absl::Status)> done;

  void answer(const absl::Status& status) {
    std::function<void(absl::Status)> run;
    absl::Status result;
    {
      std::lock_guard lock(mu);
      if (!status.ok() && first_error.ok()) first_error = status;
      if (remaining == 0 || --remaining > 0) return;
      run = std::move(done);
      result = first_error;
    }
    if (run) run(result);
  }
};

absl::Status SubscriberSettings::validate() const {
  if (max_outstanding_messages < 1) {
    return absl::InvalidArgumentError(
        "flow_control_max_outstanding_element_count must be at least 1");
  }
  if (max_outstanding_bytes < 1) {
    return absl::InvalidArgumentError(
        "flow_control_max_outstanding_request_bytes must be at least 1");
  }
  if (parallel_pull_count < 1) {
    return absl::InvalidArgumentError("parallel_pull_count must be at least 1");
  }
  if (max_ack_extension_period.count() < 0) {
    return absl::InvalidArgumentError("max_ack_extension_period must not be negative");
  }
  auto in_range = [](std::chrono::seconds s) {
    return s.count() >= 1 && s.count() <= kMaxExtensionSeconds;
  };
  if (min_duration_per_ack_extension && !in_range(*min_duration_per_ack_extension)) {
    return absl::InvalidArgumentError("min_duration_per_ack_extension must be 1 s .. 600 s");
  }
  if (max_duration_per_ack_extension && !in_range(*max_duration_per_ack_extension)) {
    return absl::InvalidArgumentError("max_duration_per_ack_extension must be 1 s .. 600 s");
  }
  if (min_duration_per_ack_extension && max_duration_per_ack_extension &&
      *min_duration_per_ack_extension > *max_duration_per_ack_extension) {
    return absl::InvalidArgumentError(
        "min_duration_per_ack_extension exceeds max_duration_per_ack_extension");
  }
  return absl::OkStatus();
}

Subscriber::Subscriber(std::shared_ptr<SubscriberStub> stub, std::string subscription,
                       SubscriberSettings settings, SubscriberCallbacks callbacks)
    : stub_(std::move(stub)),
      subscription_(std::move(subscription)),
      settings_(std::move(settings)),
      callbacks_(std::move(callbacks)),
      latency_buckets_(kMaxExtensionSeconds + 1, 0) {
  static std::atomic<std::uint64_t> next_id{0};
  std::random_device random;
  client_id_ = fmt::format("gcpstream-{:x}-{}", random(), next_id.fetch_add(1));
}

Subscriber::~Subscriber() {
  stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void Subscriber::start() {
  std::lock_guard lock(join_mu_);
  if (started_) return;
  started_ = true;
  running_threads_ = settings_.parallel_pull_count + 1;
  threads_.emplace_back([this] { settle_loop(); });
  for (int i = 0; i < settings_.parallel_pull_count; ++i) {
    threads_.emplace_back([this, i] { stream_loop(i); });
  }
}

std::chrono::seconds Subscriber::extension_locked() const {
  std::int64_t seconds = kMinExtensionSeconds;
  if (latency_count_ > 0) {
    // The 99th percentile of settle latency.
    const std::int64_t target = latency_count_ - latency_count_ / 100;
    std::int64_t seen = 0;
    for (std::size_t s = 0; s < latency_buckets_.size(); ++s) {
      seen += latency_buckets_[s];
      if (seen >= target) {
        seconds = static_cast<std::int64_t>(s);
        break;
      }
    }
  }
  std::int64_t lo = settings_.min_duration_per_ack_extension
                        ? settings_.min_duration_per_ack_extension->count()
                        : kMinExtensionSeconds;
  std::int64_t hi = settings_.max_duration_per_ack_extension
                        ? settings_.max_duration_per_ack_extension->count()
                        : kMaxExtensionSeconds;
  return std::chrono::seconds(std::clamp(seconds, lo, std::max(lo, hi)));
}

std::chrono::seconds Subscriber::current_extension() const {
  std::lock_guard lock(mu_);
  return extension_locked();
}

std::int64_t Subscriber::outstanding_messages() const {
  std::lock_guard lock(mu_);
  return static_cast<std::int64_t>(leases_.size());
}

void Subscriber::stream_loop(int index) {
  std::chrono::milliseconds backoff = settings_.reconnect_initial_backoff;
  while (run_stream(index, backoff)) {
    std::unique_lock lock(mu_);
    if (flow_cv_.wait_for(lock, backoff, [this] { return stopping_; })) break;
    backoff = std::min(backoff * 2, settings_.reconnect_max_backoff);
  }
  std::lock_guard lock(join_mu_);
  --running_threads_;
  joined_cv_.notify_all();
}

bool Subscriber::run_stream(int index, std::chrono::milliseconds& backoff) {
  std::shared_ptr<StreamingPullStream> stream = stub_->streaming_pull();
  std::chrono::seconds extension;
  {
    std::lock_guard lock(mu_);
    if (stopping_ || streams_cancelled_) return false;
    streams_.push_back(stream);
    extension = extension_locked();
  }
  streams_opened_.fetch_add(1);
  google::pubsub::v1::StreamingPullRequest first;
  first.set_subscription(subscription_);
  first.set_stream_ack_deadline_seconds(static_cast<int>(extension.count()));
  // Unique per subscriber and stable across this stream's reconnects: the service transfers
  // a disconnected stream's state to a new stream with the same client id.
  first.set_client_id(fmt::format("{}-{}", client_id_, index));
  first.set_max_outstanding_messages(settings_.max_outstanding_messages);
  first.set_max_outstanding_bytes(settings_.max_outstanding_bytes);
  if (stream->write(first)) {
    google::pubsub::v1::StreamingPullResponse response;
    while (true) {
      {
        std::unique_lock lock(mu_);
        flow_cv_.wait(lock, [this] {
          return stopping_ ||
                 (static_cast<std::int64_t>(leases_.size()) < settings_.max_outstanding_messages &&
                  outstanding_bytes_ < settings_.max_outstanding_bytes);
        });
        if (stopping_) break;
      }
      if (!stream->read(&response)) break;
      backoff = settings_.reconnect_initial_backoff;
      bool late;
      {
        std::lock_guard lock(mu_);
        late = stopping_;
      }
      if (late) {
        // Arrived while stopping. Until the settle thread takes its final snapshot of the
        // leases, these join them and are handed back in the same last requests, right before
        // the streams are cancelled; released here and now, they could expire into this still
        // open stream while the settle thread is busy (see kReleaseOnStopSeconds).
        google::pubsub::v1::ModifyAckDeadlineRequest release;
        {
          std::lock_guard lock(mu_);
          const auto now = Clock::now();
          for (const auto& r : response.received_messages()) {
            if (final_release_taken_) {
              release.add_ack_ids(r.ack_id());
            } else {
              leases_.try_emplace(r.ack_id()).first->second.received = now;
            }
          }
        }
        settle_cv_.notify_all();
        if (release.ack_ids_size() > 0) {
          release.set_subscription(subscription_);
          release.set_ack_deadline_seconds(kReleaseOnStopSeconds);
          (void)stub_->modify_ack_deadline(release, settings_.settle_rpc_timeout);
        }
        break;
      }
      const auto now = Clock::now();
      std::vector<ReceivedMessage> batch;
      batch.reserve(static_cast<std::size_t>(response.received_messages_size()));
      {
        std::lock_guard lock(mu_);
        const auto ext = extension_locked();
        const auto padding =
            std::min<std::chrono::steady_clock::duration>(std::chrono::seconds(5), ext / 2);
        for (auto& received : *response.mutable_received_messages()) {
          ReceivedMessage m;
          m.bytes = static_cast<std::int64_t>(received.message().ByteSizeLong());
          m.ack_id = received.ack_id();
          m.delivery_attempt = received.delivery_attempt();
          m.message = std::move(*received.mutable_message());
          auto [it, inserted] = leases_.try_emplace(m.ack_id);
          if (inserted) {
            it->second.bytes = m.bytes;
            it->second.received = now;
            it->second.next_extension = now + ext - padding;
            outstanding_bytes_ += m.bytes;
          }
          batch.push_back(std::move(m));
        }
      }
      if (!batch.empty()) callbacks_.on_messages(std::move(batch));
    }
  }
  {
    // While stopping, the settle thread cancels the streams once its last nacks went out.
    std::unique_lock lock(mu_);
    flow_cv_.wait(lock, [this] { return !stopping_ || streams_cancelled_; });
  }
  stream->cancel();
  absl::Status status = stream->finish();
  bool stopping;
  {
    std::lock_guard lock(mu_);
    streams_.erase(std::remove(streams_.begin(), streams_.end(), stream), streams_.end());
    stopping = stopping_;
  }
  if (stopping) return false;
  if (IsRetryableStreamCode(status.code())) {
    spdlog::debug("pubsub subscriber {}: stream {} ended ({}), reconnecting", subscription_, index,
                  status);
    return true;
  }
  fail(status);
  return false;
}

void Subscriber::fail(absl::Status status) {
  {
    std::lock_guard lock(mu_);
    if (failed_) return;
    failed_ = true;
  }
  spdlog::warn("pubsub subscriber {}: stream failed permanently: {}", subscription_, status);
  if (callbacks_.on_failure) callbacks_.on_failure(std::move(status));
  stop();
}

void Subscriber::release(const std::string& ack_id, bool record_latency) {
  auto it = leases_.find(ack_id);
  if (it == leases_.end()) return;
  if (record_latency) {
    auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - it->second.received)
            .count();
    latency_buckets_[static_cast<std::size_t>(
        std::clamp<std::int64_t>(seconds, 0, kMaxExtensionSeconds))]++;
    ++latency_count_;
  }
  outstanding_bytes_ -= it->second.bytes;
  leases_.erase(it);
}

void Subscriber::ack(const std::vector<std::string>& ack_ids,
                     std::function<void(absl::Status)> done) {
  if (ack_ids.empty()) {
    if (done) done(absl::OkStatus());
    return;
  }
  std::shared_ptr<AckWaiter> waiter;
  if (done) {
    waiter = std::make_shared<AckWaiter>();
    waiter->remaining = ack_ids.size();
    waiter->done = std::move(done);
  }
  {
    std::lock_guard lock(mu_);
    for (const auto& id : ack_ids) {
      release(id, true);
      acks_.push_back(PendingAck{id, waiter});
    }
  }
  flow_cv_.notify_all();
  settle_cv_.notify_all();
}

void Subscriber::nack(const std::vector<std::string>& ack_ids) {
  if (ack_ids.empty()) return;
  {
    std::lock_guard lock(mu_);
    for (const auto& id : ack_ids) {
      release(id, false);
      nacks_.push_back(id);
    }
  }
  flow_cv_.notify_all();
  settle_cv_.notify_all();
}

void Subscriber::settle_loop() {
  std::unique_lock lock(mu_);
  auto next_flush = Clock::now() + settings_.ack_batch_delay;
  auto next_tick = Clock::now() + kLeaseTick;
  while (true) {
    const bool full = acks_.size() >= kMaxIdsPerRequest || nacks_.size() >= kMaxIdsPerRequest;
    if (!stopping_ && !full) {
      const bool idle = acks_.empty() && nacks_.empty();
      const auto wake = idle ? next_tick : std::min(next_tick, next_flush);
      // An idle loop also wakes for the first id queued (its batch window starts then).
      settle_cv_.wait_until(lock, wake, [&] {
        return stopping_ || acks_.size() >= kMaxIdsPerRequest ||
               nacks_.size() >= kMaxIdsPerRequest || (idle && (!acks_.empty() || !nacks_.empty()));
      });
      if (idle && (!acks_.empty() || !nacks_.empty()) && next_flush < Clock::now()) {
        next_flush = Clock::now() + settings_.ack_batch_delay;
        continue;
      }
    }
    const auto now = Clock::now();
    // Requests to send now, each cut by id count and encoded size.
    struct AckBatch {
      google::pubsub::v1::AcknowledgeRequest request;
      std::vector<std::shared_ptr<AckWaiter>> waiters;
    };
    std::vector<AckBatch> ack_batches;
    std::vector<google::pubsub::v1::ModifyAckDeadlineRequest> nack_requests;
    std::vector<google::pubsub::v1::ModifyAckDeadlineRequest> extend_requests;
    const bool flush = stopping_ || now >= next_flush || acks_.size() >= kMaxIdsPerRequest ||
                       nacks_.size() >= kMaxIdsPerRequest;
    if (flush) {
      // Everything queued goes now, in as many requests as it takes.
      RequestCutter cutter;
      while (!acks_.empty()) {
        if (ack_batches.empty() ||
            !cutter.fits(ack_batches.back().request.ack_ids_size(), acks_.front().ack_id)) {
          ack_batches.emplace_back();
          cutter.reset();
        }
        cutter.add(acks_.front().ack_id);
        ack_batches.back().request.add_ack_ids(std::move(acks_.front().ack_id));
        ack_batches.back().waiters.push_back(std::move(acks_.front().waiter));
        acks_.pop_front();
      }
      cutter.reset();
      while (!nacks_.empty()) {
        AppendCut(nack_requests, cutter, std::move(nacks_.front()));
        nacks_.pop_front();
      }
      next_flush = now + settings_.ack_batch_delay;
    }
    std::int64_t expired = 0;
    int extension_seconds = 0;
    if (now >= next_tick && !stopping_) {
      next_tick = now + kLeaseTick;
      const auto ext = extension_locked();
      extension_seconds = static_cast<int>(ext.count());
      const auto padding =
          std::min<std::chrono::steady_clock::duration>(std::chrono::seconds(5), ext / 2);
      const bool extend = settings_.max_ack_extension_period.count() > 0;
      RequestCutter cutter;
      for (auto it = leases_.begin(); it != leases_.end();) {
        auto& lease = it->second;
        if (extend && now - lease.received >= settings_.max_ack_extension_period) {
          // Extension budget spent: stop holding the lease; the service redelivers it.
          outstanding_bytes_ -= lease.bytes;
          leases_.erase(it++);
          ++expired;
          continue;
        }
        // Every lease due is extended in this tick, however many there are: a lease left for
        // a later tick may expire first, and the service then redelivers its message.
        if (extend && now >= lease.next_extension) {
          AppendCut(extend_requests, cutter, it->first);
          lease.next_extension = now + ext - padding;
        }
        ++it;
      }
    }
    const bool stopping = stopping_;
    const bool done_stopping = stopping_ && acks_.empty() && nacks_.empty();
    std::vector<google::pubsub::v1::ModifyAckDeadlineRequest> final_nacks;
    if (done_stopping) {
      final_release_taken_ = true;  // later arrivals are released by their stream thread
      // Everything still leased goes back to the service (see kReleaseOnStopSeconds).
      RequestCutter cutter;
      for (auto& [id, lease] : leases_) AppendCut(final_nacks, cutter, id);
      leases_.clear();
      outstanding_bytes_ = 0;
    }
    lock.unlock();
    if (expired > 0) {
      leases_expired_.fetch_add(expired);
      flow_cv_.notify_all();
    }
    for (auto& batch : ack_batches) {
      batch.request.set_subscription(subscription_);
      absl::Status status = stub_->acknowledge(batch.request, settings_.settle_rpc_timeout);
      if (!status.ok()) {
        spdlog::warn("pubsub subscriber {}: acknowledging {} messages failed: {}", subscription_,
                     batch.request.ack_ids_size(), status);
      }
      for (auto& w : batch.waiters) {
        if (w) w->answer(status);
      }
    }
    auto modify = [this](google::pubsub::v1::ModifyAckDeadlineRequest& request, int deadline) {
      if (request.ack_ids_size() == 0) return;
      request.set_subscription(subscription_);
      request.set_ack_deadline_seconds(deadline);
      absl::Status status = stub_->modify_ack_deadline(request, settings_.settle_rpc_timeout);
      if (!status.ok()) {
        spdlog::debug("pubsub subscriber {}: ModifyAckDeadline({}) of {} messages failed: {}",
                      subscription_, deadline, request.ack_ids_size(), status);
      }
    };
    // A nack while stopping releases the message just after the streams close, not into them.
    const int nack_deadline = stopping ? kReleaseOnStopSeconds : 0;
    for (auto& r : nack_requests) modify(r, nack_deadline);
    for (auto& r : extend_requests) modify(r, extension_seconds);
    if (done_stopping) {
      for (auto& r : final_nacks) modify(r, kReleaseOnStopSeconds);
      cancel_streams();
      break;
    }
    lock.lock();
  }
  std::lock_guard join_lock(join_mu_);
  --running_threads_;
  joined_cv_.notify_all();
}

void Subscriber::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  // The streams stay open until the settle thread has sent the last acks and nacks: the
  // emulator (at least) does not honour a nack that arrives after its stream was cancelled.
  flow_cv_.notify_all();
  settle_cv_.notify_all();
}

void Subscriber::cancel_streams() {
  std::vector<std::shared_ptr<StreamingPullStream>> streams;
  {
    std::lock_guard lock(mu_);
    streams = streams_;
    streams_cancelled_ = true;
  }
  for (auto& s : streams) s->cancel();
  flow_cv_.notify_all();
}

bool Subscriber::await_terminated(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(join_mu_);
  if (!started_) return true;
  return joined_cv_.wait_until(lock, deadline, [this] { return running_threads_ == 0; });
}

}  // namespace gcpstream::pubsub
