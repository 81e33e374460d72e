#ifndef GCPSTREAM_RUNTIME_EXCHANGE_H_
#define GCPSTREAM_RUNTIME_EXCHANGE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "gcpstream/util/absl_fmt.h"

#include "gcpstream/runtime/channel.h"
#include "gcpstream/runtime/output.h"
#include "gcpstream/runtime/stream_operator.h"

namespace gcpstream::runtime {

enum class Partitioning {
  kForward,    // subtask i -> subtask i (equal parallelism)
  kRebalance,  // round-robin over all downstream subtasks
  kHash,       // by key: key group = hash(key) mod max_parallelism, a range per subtask
};

// Key groups (Flink's): the unit keyed data is distributed and rescaled by.
inline int KeyGroupFor(std::uint64_t key_hash, int max_parallelism) {
  // Mix the hash so that poor std::hash values (identity for integers) spread well.
  std::uint64_t h = key_hash;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return static_cast<int>(h % static_cast<std::uint64_t>(max_parallelism));
}
inline int OperatorIndexForKeyGroup(int key_group, int max_parallelism, int parallelism) {
  return key_group * parallelism / max_parallelism;
}

// Exchange tuning.
struct ExchangeOptions {
  int records_per_buffer = 256;   // a buffer is sent when it holds this many records
  int buffers_per_channel = 8;    // capacity of each channel (bounded: backpressure)
};

// The sending side of an exchange in one upstream subtask: partitions records into per-channel
// buffers and pushes them into the downstream subtasks' gates. When a gate is full the subtask
// yields to its mailbox (backpressure), so checkpoints and completions still run.
template <typename T>
class ExchangeOutput final : public StreamOperator, public Output<T> {
 public:
  using KeyHash = std::function<std::uint64_t(const T&)>;

  ExchangeOutput(std::vector<std::shared_ptr<InputGate<T>>> gates, Partitioning partitioning,
                 KeyHash key_hash, ExchangeOptions options, OperatorContext& ctx)
      : gates_(std::move(gates)),
        partitioning_(partitioning),
        key_hash_(std::move(key_hash)),
        options_(options),
        ctx_(ctx),
        buffers_(gates_.size()),
        next_channel_(static_cast<std::size_t>(ctx.subtask_index) % gates_.size()) {
    for (auto& b : buffers_) b.reserve(static_cast<std::size_t>(options_.records_per_buffer));
  }

  absl::Status open() override {
    // The listener runs on the consumer's thread and may outlive this operator: it holds the
    // mailbox weakly and only posts a no-op mail that wakes a yielding push().
    std::weak_ptr<TaskMailbox> mailbox = ctx_.mailbox;
    const int priority = ctx_.priority;
    for (auto& gate : gates_) {
      gate->set_space_listener(ctx_.subtask_index, [mailbox, priority] {
        if (auto mb = mailbox.lock()) {
          mb->put({priority, [] { return absl::OkStatus(); }, "exchange channel has space"});
        }
      });
    }
    return absl::OkStatus();
  }

  absl::Status collect(StreamRecord<T>&& record) override {
    const std::size_t channel = select_channel(record.value);
    auto& buffer = buffers_[channel];
    buffer.push_back(std::move(record));
    if (buffer.size() >= static_cast<std::size_t>(options_.records_per_buffer)) {
      return send_buffer(channel);
    }
    return absl::OkStatus();
  }

  absl::Status emit_watermark(std::int64_t watermark_ms) override {
    ChannelEvent event;
    event.kind = ChannelEvent::Kind::kWatermark;
    event.watermark_ms = watermark_ms;
    return broadcast_event(event);
  }
  absl::Status emit_watermark_status(bool idle) override {
    ChannelEvent event;
    event.kind = ChannelEvent::Kind::kWatermarkStatus;
    event.idle = idle;
    return broadcast_event(event);
  }
  // Flushes every buffer, then sends the event to every channel (events never overtake
  // records).
  absl::Status broadcast_event(const ChannelEvent& event) {
    for (std::size_t c = 0; c < gates_.size(); ++c) {
      if (absl::Status s = send_buffer(c); !s.ok()) return s;
      ChannelElement<T> element;
      element.event = event;
      if (absl::Status s = push(c, element); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status on_idle() override { return flush_all(); }

  absl::Status emit_barrier(const CheckpointBarrier& barrier) override {
    ChannelEvent event;
    event.kind = ChannelEvent::Kind::kBarrier;
    event.barrier = barrier;
    return broadcast_event(event);
  }

  absl::Status finish() override {
    ChannelEvent end;
    end.kind = ChannelEvent::Kind::kEndOfPartition;
    return broadcast_event(end);
  }

  absl::Status flush_all() {
    for (std::size_t c = 0; c < gates_.size(); ++c) {
      if (absl::Status s = send_buffer(c); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  std::size_t select_channel(const T& value) {
    switch (partitioning_) {
      case Partitioning::kForward:
        return static_cast<std::size_t>(ctx_.subtask_index);
      case Partitioning::kRebalance: {
        const std::size_t c = next_channel_;
        next_channel_ = (next_channel_ + 1) % gates_.size();
        return c;
      }
      case Partitioning::kHash: {
        const int key_group = KeyGroupFor(key_hash_(value), ctx_.max_parallelism);
        return static_cast<std::size_t>(OperatorIndexForKeyGroup(
            key_group, ctx_.max_parallelism, static_cast<int>(gates_.size())));
      }
    }
    return 0;
  }

  absl::Status send_buffer(std::size_t channel) {
    auto& buffer = buffers_[channel];
    if (buffer.empty()) return absl::OkStatus();
    ChannelElement<T> element;
    element.records.swap(buffer);
    buffer.reserve(static_cast<std::size_t>(options_.records_per_buffer));
    return push(channel, element);
  }

  absl::Status push(std::size_t channel, ChannelElement<T>& element) {
    auto& gate = *gates_[channel];
    while (!gate.try_push(ctx_.subtask_index, element)) {
      absl::Status s = ctx_.mailbox_executor->yield_until(
          [&] { return gate.has_space(ctx_.subtask_index); });
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  std::vector<std::shared_ptr<InputGate<T>>> gates_;
  Partitioning partitioning_;
  KeyHash key_hash_;
  ExchangeOptions options_;
  OperatorContext& ctx_;
  std::vector<std::vector<StreamRecord<T>>> buffers_;
  std::size_t next_channel_;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_EXCHANGE_H_
