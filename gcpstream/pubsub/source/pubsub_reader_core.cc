#include "gcpstream/pubsub/source/pubsub_reader_core.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "gcpstream/connector/bounded_shutdown.h"
#include "gcpstream/pubsub/source/pubsub_split_enumerator.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::pubsub {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kShutdownsAbandoned[] = "subscriberShutdownsAbandoned";
constexpr char kFailuresUnreported[] = "subscriberFailuresUnreported";
// The fetch loop wakes at least this often, so the first-checkpoint detector runs even when
// nothing arrives (the stalled state is exactly the state without deliveries).
constexpr auto kFetchWait = std::chrono::milliseconds(500);

}  // namespace

PubSubReaderCore::PubSubReaderCore(std::shared_ptr<const PubSubSourceConfig> config,
                                   SourceReaderContext& context)
    : config_(std::move(config)),
      context_(context),
      subscriber_settings_(config_->subscriber_options.to_subscriber_settings()) {
  MetricGroup& g = context.metric_group();
  messages_acked_ = &g.counter("messagesAcked");
  messages_nacked_ = &g.counter("messagesNacked");
  splits_parked_ = &g.counter("splitsParked");
  num_records_in_ = &g.counter(metric_names::kNumRecordsIn);
  num_records_in_errors_ = &g.counter(metric_names::kNumRecordsInErrors);
  records_skipped_ = &g.counter("recordsSkipped");
}

void PubSubReaderCore::register_gauges() {
  // Gauges read atomics only (the reporter's thread must never walk the buffers), through a
  // weak reference: the metric group may outlive this reader.
  MetricGroup& g = context_.metric_group();
  std::weak_ptr<PubSubReaderCore> weak = weak_from_this();
  auto gauge = [&g, weak](std::string_view name, std::int64_t (*read)(const PubSubReaderCore&)) {
    g.gauge(name, [weak, read] {
      auto core = weak.lock();
      return core ? static_cast<double>(read(*core)) : 0.0;
    });
  };
  gauge("bufferedMessages", [](const PubSubReaderCore& c) { return c.buffered_messages_.load(); });
  gauge("bufferedBytes", [](const PubSubReaderCore& c) { return c.buffered_bytes_.load(); });
  gauge("fetcherBufferedMessages",
        [](const PubSubReaderCore& c) { return c.fetcher_messages_.load(); });
  gauge("fetcherBufferedBytes", [](const PubSubReaderCore& c) { return c.fetcher_bytes_.load(); });
  gauge("parkedSplits", [](const PubSubReaderCore& c) { return c.parked_splits_.load(); });
  gauge("pendingAcks", [](const PubSubReaderCore& c) { return c.tracker_.outstanding(); });
  g.gauge(kShutdownsAbandoned,
          [] { return static_cast<double>(connector::ProcessCounter(kShutdownsAbandoned).get()); });
  g.gauge(kFailuresUnreported,
          [] { return static_cast<double>(connector::ProcessCounter(kFailuresUnreported).get()); });
}

PubSubReaderCore::~PubSubReaderCore() { (void)close(); }

absl::Status PubSubReaderCore::add_splits(std::vector<PubSubSplit> splits) {
  if (!stub_) {
    auto stub = config_->make_stub();
    if (!stub.ok()) return stub.status();
    stub_ = *std::move(stub);
  }
  std::lock_guard lock(mu_);
  if (closed_) return absl::OkStatus();
  if (!first_assignment_) first_assignment_ = Clock::now();
  for (auto& split : splits) {
    const std::string id = split.split_id();
    auto [it, inserted] = slots_.try_emplace(id);
    if (!inserted && it->second.subscriber) continue;  // already reading it
    it->second.split = std::move(split);
    open_subscriber_locked(it->second);
  }
  return absl::OkStatus();
}

void PubSubReaderCore::open_subscriber_locked(Slot& slot) {
  const int generation = ++slot.generation;
  const std::string id = slot.split.split_id();
  std::weak_ptr<PubSubReaderCore> weak = weak_from_this();
  SubscriberCallbacks callbacks;
  callbacks.on_messages = [weak, id, generation](std::vector<ReceivedMessage> batch) {
    if (auto core = weak.lock()) core->on_messages(id, generation, std::move(batch));
  };
  callbacks.on_failure = [weak, id, generation](absl::Status status) {
    if (auto core = weak.lock()) {
      core->on_failure(id, generation, std::move(status));
    } else {
      connector::ProcessCounter(kFailuresUnreported).inc();
    }
  };
  slot.subscriber = std::make_shared<Subscriber>(stub_, slot.split.subscription.resource_name(),
                                                 subscriber_settings_, std::move(callbacks));
  slot.parked = false;
  slot.subscriber->start();
}

void PubSubReaderCore::on_messages(const std::string& split_id, int generation,
                                   std::vector<ReceivedMessage> batch) {
  std::unique_lock lock(mu_);
  auto it = slots_.find(split_id);
  // A delivery to a subscriber being torn down: its stop() nacks every lease it still holds.
  if (closed_ || it == slots_.end() || it->second.generation != generation ||
      !it->second.subscriber) {
    return;
  }
  Slot& slot = it->second;
  const auto& opts = config_->subscriber_options;
  const bool was_empty = slot.buffer.empty();
  std::size_t taken = 0;
  for (; taken < batch.size(); ++taken) {
    ReceivedMessage& m = batch[taken];
    if (buffered_messages_.load() + 1 > opts.subscriber_buffer_max_messages ||
        buffered_bytes_.load() + m.bytes > opts.subscriber_buffer_max_bytes) {
      break;
    }
    tracker_.add_pending(split_id, m.ack_id);
    buffered_messages_.fetch_add(1);
    buffered_bytes_.fetch_add(m.bytes);
    slot.bytes += m.bytes;
    slot.buffer.push_back(std::move(m));
  }
  if (was_empty && !slot.buffer.empty()) cv_.notify_all();
  if (taken == batch.size()) return;
  // The hard budget: refuse the rest of the response before it is retained, stop intake
  // everywhere.
  std::vector<std::string> refused;
  refused.reserve(batch.size() - taken);
  for (std::size_t i = taken; i < batch.size(); ++i) refused.push_back(std::move(batch[i].ack_id));
  slot.subscriber->nack(refused);
  messages_nacked_->inc(static_cast<std::int64_t>(refused.size()));
  bool all_paused = !slots_.empty();
  for (auto& [id, s] : slots_) all_paused = all_paused && (s.paused || s.parked);
  for (auto& [id, s] : slots_) {
    if (s.subscriber) s.subscriber->stop();
  }
  if (all_paused) {
    park_paused_requested_ = true;
    cv_.notify_all();
    return;
  }
  if (overflow_reported_) return;
  overflow_reported_ = true;
  std::string message = fmt::format(
      "the subscriber buffer reached its reader-wide budget ({} messages or {} bytes; "
      "subscriber_buffer_max_messages / subscriber_buffer_max_bytes) while consuming: the "
      "job downstream has stopped taking records. Raise the budget only if ordinary bursts "
      "reach it and memory allows",
      opts.subscriber_buffer_max_messages, opts.subscriber_buffer_max_bytes);
  lock.unlock();
  spdlog::error("pubsub source: {}", message);
  context_.send_source_event_to_coordinator(
      std::make_shared<SubscriberBufferOverflow>(std::move(message)));
}

void PubSubReaderCore::on_failure(const std::string& split_id, int generation,
                                  absl::Status status) {
  std::lock_guard lock(mu_);
  auto it = slots_.find(split_id);
  if (closed_ || it == slots_.end() || it->second.generation != generation) {
    // Raised by a subscriber being torn down: no fetch will ever report it.
    connector::ProcessCounter(kFailuresUnreported).inc();
    spdlog::warn("pubsub source: subscriber of split {} failed during teardown: {}", split_id,
                 status);
    return;
  }
  if (it->second.failure.ok()) {
    it->second.failure = absl::Status(
        status.code(), fmt::format("Pub/Sub subscriber of split {} failed permanently: {}",
                                   split_id, status.message()));
  }
  cv_.notify_all();
}

PubSubReaderCore::Teardown PubSubReaderCore::detach_locked(Slot& slot) {
  Teardown t;
  t.split_id = slot.split.split_id();
  t.subscriber = std::move(slot.subscriber);
  slot.subscriber.reset();
  ++slot.generation;
  for (auto& m : slot.buffer) t.nacks.push_back(m.ack_id);
  buffered_messages_.fetch_sub(static_cast<std::int64_t>(slot.buffer.size()));
  buffered_bytes_.fetch_sub(slot.bytes);
  slot.buffer.clear();
  slot.bytes = 0;
  // The tracker's ids include the buffered ones: take_all() returns every state.
  t.nacks = tracker_.take_all(t.split_id);
  return t;
}

void PubSubReaderCore::park_locked(Slot& slot, std::vector<Teardown>& out) {
  if (slot.parked) return;
  out.push_back(detach_locked(slot));
  slot.parked = true;
  parked_splits_.fetch_add(1);
  splits_parked_->inc();
  spdlog::warn(
      "pubsub source: parked paused split {}: its buffer outgrew its bound; its messages were "
      "nacked and are redelivered when it resumes",
      slot.split.split_id());
}

void PubSubReaderCore::teardown(std::vector<Teardown> teardowns) {
  if (teardowns.empty()) return;
  for (auto& t : teardowns) {
    if (!t.subscriber) continue;
    messages_nacked_->inc(static_cast<std::int64_t>(t.nacks.size()));
    t.subscriber->nack(t.nacks);
    t.subscriber->stop();
  }
  const auto deadline = Clock::now() + config_->subscriber_options.shutdown_timeout;
  for (auto& t : teardowns) {
    if (!t.subscriber) continue;
    if (t.subscriber->await_terminated(deadline)) continue;
    connector::ProcessCounter(kShutdownsAbandoned).inc();
    spdlog::warn(
        "pubsub source: the subscriber of split {} did not stop within shutdown_timeout ({} "
        "ms); abandoning it (its messages wait out their acknowledgement deadline)",
        t.split_id, config_->subscriber_options.shutdown_timeout.count());
    // Its threads end on their own; the last reference goes with them.
    std::thread([s = std::move(t.subscriber)]() mutable { s.reset(); }).detach();
  }
}

absl::StatusOr<RecordsWithSplitIds<PubSubElement>> PubSubReaderCore::fetch() {
  RecordsWithSplitIds<PubSubElement> batch;
  std::unique_lock lock(mu_);
  const auto& opts = config_->subscriber_options;
  while (!closed_) {
    for (auto& [id, slot] : slots_) {
      if (slot.failure.ok()) continue;
      slot.failure_reported = true;
      return slot.failure;
    }
    if (opts.first_checkpoint_timeout.count() > 0 && !barrier_seen_.load() && first_assignment_ &&
        Clock::now() - *first_assignment_ > opts.first_checkpoint_timeout &&
        tracker_.outstanding() > 0) {
      return absl::FailedPreconditionError(fmt::format(
          "Pub/Sub source: no checkpoint was taken within first_checkpoint_timeout ({} ms) of "
          "the first split assignment while {} messages wait for acknowledgement. Messages are "
          "acknowledged only when a checkpoint completes: enable checkpointing (the checkpoint "
          "interval, Flink's execution.checkpointing.interval), or raise "
          "first_checkpoint_timeout (0 disables this check)",
          opts.first_checkpoint_timeout.count(), tracker_.outstanding()));
    }
    std::vector<Teardown> parks;
    for (auto& [id, slot] : slots_) {
      if (!slot.paused || slot.parked) continue;
      if (park_paused_requested_ ||
          static_cast<std::int64_t>(slot.buffer.size()) >
              opts.effective_paused_split_max_messages() ||
          slot.bytes > opts.effective_paused_split_max_bytes()) {
        park_locked(slot, parks);
      }
    }
    park_paused_requested_ = false;
    if (!parks.empty()) {
      lock.unlock();
      teardown(std::move(parks));
      lock.lock();
      continue;
    }
    for (auto& [id, slot] : slots_) {
      if (slot.paused || slot.buffer.empty()) continue;
      std::size_t n = std::min<std::size_t>(slot.buffer.size(),
                                            static_cast<std::size_t>(opts.max_records_per_fetch));
      std::int64_t bytes = 0;
      for (std::size_t i = 0; i < n; ++i) {
        bytes += slot.buffer.front().bytes;
        batch.add(id, PubSubElement{std::move(slot.buffer.front())});
        slot.buffer.pop_front();
      }
      slot.bytes -= bytes;
      buffered_messages_.fetch_sub(static_cast<std::int64_t>(n));
      buffered_bytes_.fetch_sub(bytes);
      fetcher_messages_.fetch_add(static_cast<std::int64_t>(n));
      fetcher_bytes_.fetch_add(bytes);
    }
    if (!batch.empty()) return batch;
    if (woken_) {
      woken_ = false;
      return batch;
    }
    cv_.wait_for(lock, kFetchWait);
  }
  return batch;
}

void PubSubReaderCore::wake_up() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

absl::Status PubSubReaderCore::pause_or_resume(const std::vector<std::string>& to_pause,
                                               const std::vector<std::string>& to_resume) {
  std::lock_guard lock(mu_);
  for (const auto& id : to_pause) {
    if (auto it = slots_.find(id); it != slots_.end()) it->second.paused = true;
  }
  for (const auto& id : to_resume) {
    auto it = slots_.find(id);
    if (it == slots_.end()) continue;
    it->second.paused = false;
    if (it->second.parked && !closed_) {
      // A fresh subscriber: Pub/Sub redelivers what the parked one handed back.
      parked_splits_.fetch_sub(1);
      open_subscriber_locked(it->second);
    }
  }
  cv_.notify_all();
  return absl::OkStatus();
}

absl::Status PubSubReaderCore::close() {
  std::vector<Teardown> teardowns;
  {
    std::lock_guard lock(mu_);
    if (closed_) return absl::OkStatus();
    closed_ = true;
    for (auto& [id, slot] : slots_) {
      if (!slot.failure.ok() && !slot.failure_reported) {
        // Recorded but never fetched: nothing will fail the job for it.
        connector::ProcessCounter(kFailuresUnreported).inc();
        spdlog::warn("pubsub source: closing with an unreported subscriber failure: {}",
                     slot.failure);
      }
      if (slot.subscriber) teardowns.push_back(detach_locked(slot));
    }
    parked_splits_.store(0);
  }
  cv_.notify_all();
  teardown(std::move(teardowns));
  return absl::OkStatus();
}

void PubSubReaderCore::on_snapshot(std::int64_t checkpoint_id) {
  barrier_seen_.store(true);
  tracker_.bind(checkpoint_id);
}

std::shared_ptr<Subscriber> PubSubReaderCore::subscriber_of(const std::string& split_id) {
  std::lock_guard lock(mu_);
  auto it = slots_.find(split_id);
  return it == slots_.end() ? nullptr : it->second.subscriber;
}

absl::Status PubSubReaderCore::on_checkpoint_complete(std::int64_t checkpoint_id) {
  auto completed = tracker_.take_completed(checkpoint_id);
  if (completed.empty()) return absl::OkStatus();
  const auto& await = config_->subscriber_options.await_ack_confirmation;
  struct Latch {
    std::mutex mu;
    std::condition_variable cv;
    int remaining = 0;
    absl::Status error;
  };
  auto latch = std::make_shared<Latch>();
  for (auto& [split_id, ids] : completed) {
    auto subscriber = subscriber_of(split_id);
    if (!subscriber || ids.empty()) continue;
    messages_acked_->inc(static_cast<std::int64_t>(ids.size()));
    if (!await) {
      subscriber->ack(ids);
      continue;
    }
    {
      std::lock_guard lock(latch->mu);
      ++latch->remaining;
    }
    subscriber->ack(ids, [latch](absl::Status status) {
      std::lock_guard lock(latch->mu);
      if (!status.ok() && latch->error.ok()) latch->error = status;
      --latch->remaining;
      latch->cv.notify_all();
    });
  }
  if (!await) return absl::OkStatus();
  std::unique_lock lock(latch->mu);
  if (!latch->cv.wait_for(lock, *await, [&] { return latch->remaining == 0; })) {
    return absl::DeadlineExceededError(fmt::format(
        "Pub/Sub source: the service did not confirm the acknowledgements of checkpoint {} "
        "within await_ack_confirmation ({} ms)",
        checkpoint_id, await->count()));
  }
  if (!latch->error.ok()) {
    return absl::Status(latch->error.code(),
                        fmt::format("Pub/Sub source: acknowledging checkpoint {} failed: {}",
                                    checkpoint_id, latch->error.message()));
  }
  return absl::OkStatus();
}

void PubSubReaderCore::on_taken(const PubSubElement& element) {
  fetcher_messages_.fetch_sub(1);
  fetcher_bytes_.fetch_sub(element.received.bytes);
}

void PubSubReaderCore::on_emitted(const std::string& split_id, const std::string& ack_id) {
  tracker_.mark_emitted(split_id, ack_id);
}

void PubSubReaderCore::nack_now(const std::string& split_id, const std::string& ack_id) {
  tracker_.drop(split_id, ack_id);
  if (auto subscriber = subscriber_of(split_id)) {
    subscriber->nack({ack_id});
    messages_nacked_->inc();
  }
}

}  // namespace gcpstream::pubsub
