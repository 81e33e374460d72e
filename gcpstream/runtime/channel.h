#ifndef GCPSTREAM_RUNTIME_CHANNEL_H_
#define GCPSTREAM_RUNTIME_CHANNEL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "gcpstream/api/record.h"

namespace gcpstream::runtime {

// A checkpoint barrier travelling in-band with the records.
struct CheckpointBarrier {
  std::int64_t checkpoint_id = 0;
  std::int64_t timestamp_ms = 0;
  bool is_savepoint = false;
  bool stop_with_savepoint = false;  // sources end after this barrier
};

// A non-record element of a channel.
struct ChannelEvent {
  enum class Kind { kWatermark, kWatermarkStatus, kBarrier, kEndOfPartition };
  Kind kind = Kind::kWatermark;
  std::int64_t watermark_ms = kMinWatermark;  // kWatermark
  bool idle = false;                          // kWatermarkStatus
  CheckpointBarrier barrier;                  // kBarrier
};

// What moves through a channel: a batch of records, or one event (never both).
template <typename T>
struct ChannelElement {
  std::vector<StreamRecord<T>> records;
  std::optional<ChannelEvent> event;
};

// The receiving side of an exchange for one downstream subtask: one bounded FIFO per upstream
// subtask (channel). Capacity is counted in elements (record batches or events) per channel.
//
// Producers (upstream subtask threads) call try_push(); when it refuses, they yield to their
// mailbox until the space listener they registered runs. The consumer (the downstream subtask
// thread) calls poll(). Both notifications run on the thread that caused them and must only
// post mails. Thread-safe.
template <typename T>
class InputGate {
 public:
  InputGate(int channels, int capacity_per_channel, std::function<void()> on_data)
      : queues_(static_cast<std::size_t>(channels)),
        blocked_(static_cast<std::size_t>(channels), false),
        space_listeners_(static_cast<std::size_t>(channels)),
        capacity_(static_cast<std::size_t>(capacity_per_channel < 1 ? 1 : capacity_per_channel)),
        on_data_(std::move(on_data)) {}

  int channel_count() const { return static_cast<int>(queues_.size()); }

  // Producer. Appends unless the channel is full (then returns false and leaves `element`).
  // After close() every push is accepted and discarded (the consumer is gone).
  bool try_push(int channel, ChannelElement<T>& element) {
    {
      std::lock_guard lock(mu_);
      if (closed_) return true;
      auto& q = queues_[static_cast<std::size_t>(channel)];
      if (q.size() >= capacity_) return false;
      q.push_back(std::move(element));
    }
    on_data_();
    return true;
  }

  bool has_space(int channel) const {
    std::lock_guard lock(mu_);
    return closed_ || queues_[static_cast<std::size_t>(channel)].size() < capacity_;
  }

  // Producer: `listener` runs (on the consumer's thread) whenever this channel frees space.
  void set_space_listener(int channel, std::function<void()> listener) {
    std::lock_guard lock(mu_);
    space_listeners_[static_cast<std::size_t>(channel)] = std::move(listener);
  }

  // Consumer: the next element of an unblocked, non-empty channel, round-robin.
  std::optional<std::pair<int, ChannelElement<T>>> poll() {
    std::function<void()> notify;
    std::optional<std::pair<int, ChannelElement<T>>> result;
    {
      std::lock_guard lock(mu_);
      const std::size_t n = queues_.size();
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t c = (next_ + i) % n;
        if (blocked_[c] || queues_[c].empty()) continue;
        const bool was_full = queues_[c].size() >= capacity_;
        result.emplace(static_cast<int>(c), std::move(queues_[c].front()));
        queues_[c].pop_front();
        next_ = (c + 1) % n;
        if (was_full) notify = space_listeners_[c];
        break;
      }
    }
    if (notify) notify();
    return result;
  }

  // Consumer: barrier alignment. A blocked channel is skipped by poll().
  void block(int channel) {
    std::lock_guard lock(mu_);
    blocked_[static_cast<std::size_t>(channel)] = true;
  }
  void unblock_all() {
    {
      std::lock_guard lock(mu_);
      std::fill(blocked_.begin(), blocked_.end(), false);
    }
    on_data_();
  }

  // Consumer going away: wakes every waiting producer; later pushes are discarded.
  void close() {
    std::vector<std::function<void()>> listeners;
    {
      std::lock_guard lock(mu_);
      closed_ = true;
      for (auto& q : queues_) q.clear();
      listeners = space_listeners_;
    }
    for (auto& l : listeners) {
      if (l) l();
    }
  }

  // Elements queued in all channels (for metrics and tests).
  std::size_t queued() const {
    std::lock_guard lock(mu_);
    std::size_t n = 0;
    for (const auto& q : queues_) n += q.size();
    return n;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::deque<ChannelElement<T>>> queues_;
  std::vector<bool> blocked_;
  std::vector<std::function<void()>> space_listeners_;
  const std::size_t capacity_;
  std::function<void()> on_data_;
  std::size_t next_ = 0;
  bool closed_ = false;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_CHANNEL_H_
