#ifndef GCPSTREAM_RUNTIME_INPUT_PROCESSOR_H_
#define GCPSTREAM_RUNTIME_INPUT_PROCESSOR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/runtime/channel.h"
#include "gcpstream/runtime/mailbox.h"
#include "gcpstream/runtime/output.h"
#include "gcpstream/runtime/watermark_valve.h"

namespace gcpstream::runtime {

// The subtask's default action: read some input and push it into the chain.
class InputProcessor {
 public:
  virtual ~InputProcessor() = default;
  virtual absl::StatusOr<MailboxProcessor::ActionResult> process_input() = 0;
  // The watermark this input last passed to the chain (kMinWatermark before the first), or
  // nullopt for an input without watermarks of its own (a source reader's). Any thread.
  virtual std::optional<std::int64_t> input_watermark() const { return std::nullopt; }
};

// Receives checkpoint barriers from a network input once they are aligned (implemented by the
// subtask).
class BarrierHandler {
 public:
  virtual ~BarrierHandler() = default;
  // Barrier n has arrived on every input channel that has not ended.
  virtual absl::Status on_aligned_barrier(const CheckpointBarrier& barrier) = 0;
  // The first barrier of checkpoint `checkpoint_id` arrived (its alignment starts).
  virtual void on_alignment_started(std::int64_t /*checkpoint_id*/) {}
};

// Reads an InputGate into the head of the chain: records in order, watermarks combined over
// channels (WatermarkValve), barriers aligned and handed to the BarrierHandler.
//
// Alignment: when barrier n arrives on a channel, exactly-once mode blocks that channel (its
// later records belong to the next checkpoint) until barrier n has arrived on every channel that
// has not ended; at-least-once mode only counts. A barrier of a newer checkpoint abandons an
// incomplete alignment (that checkpoint is aborted by its timeout or decline). A
// stop-with-savepoint barrier is always aligned.
template <typename T>
class NetworkInput final : public InputProcessor {
 public:
  NetworkInput(std::shared_ptr<InputGate<T>> gate, Output<T>* head, BarrierHandler* barriers,
               bool exactly_once = true)
      : gate_(std::move(gate)),
        head_(head),
        barriers_(barriers),
        exactly_once_(exactly_once),
        valve_(gate_->channel_count()),
        open_channels_(gate_->channel_count()),
        finished_(static_cast<std::size_t>(gate_->channel_count()), false) {}

  absl::StatusOr<MailboxProcessor::ActionResult> process_input() override {
    auto polled = gate_->poll();
    if (!polled) {
      return open_channels_ == 0 ? MailboxProcessor::ActionResult::kEndOfInput
                                 : MailboxProcessor::ActionResult::kNothingAvailable;
    }
    auto& [channel, element] = *polled;
    for (auto& record : element.records) {
      absl::Status s = head_->collect(std::move(record));
      if (!s.ok()) return s;
    }
    if (element.event) {
      absl::Status s = on_event(channel, *element.event);
      if (!s.ok()) return s;
    }
    return open_channels_ == 0 ? MailboxProcessor::ActionResult::kEndOfInput
                               : MailboxProcessor::ActionResult::kMore;
  }

  InputGate<T>& gate() { return *gate_; }

  std::optional<std::int64_t> input_watermark() const override {
    return watermark_.load(std::memory_order_relaxed);
  }

 private:
  absl::Status apply(const WatermarkValve::Change& change) {
    if (change.idle && *change.idle) {
      if (absl::Status s = head_->emit_watermark_status(true); !s.ok()) return s;
    }
    if (change.idle && !*change.idle) {
      if (absl::Status s = head_->emit_watermark_status(false); !s.ok()) return s;
    }
    if (change.watermark) {
      watermark_.store(*change.watermark, std::memory_order_relaxed);
      return head_->emit_watermark(*change.watermark);
    }
    return absl::OkStatus();
  }

  absl::Status on_event(int channel, const ChannelEvent& event) {
    switch (event.kind) {
      case ChannelEvent::Kind::kWatermark:
        return apply(valve_.on_watermark(channel, event.watermark_ms));
      case ChannelEvent::Kind::kWatermarkStatus:
        return apply(valve_.on_status(channel, event.idle));
      case ChannelEvent::Kind::kBarrier:
        return on_barrier(channel, event.barrier);
      case ChannelEvent::Kind::kEndOfPartition: {
        --open_channels_;
        finished_[static_cast<std::size_t>(channel)] = true;
        if (absl::Status s = apply(valve_.on_finished(channel)); !s.ok()) return s;
        return maybe_aligned();
      }
    }
    return absl::OkStatus();
  }

  absl::Status on_barrier(int channel, const CheckpointBarrier& barrier) {
    if (barrier.checkpoint_id <= last_aligned_) return absl::OkStatus();  // late
    if (aligning_ && barrier.checkpoint_id > aligning_->checkpoint_id) {
      gate_->unblock_all();  // abandon the older, incomplete alignment
      aligning_.reset();
      received_.clear();
    }
    if (!aligning_) {
      aligning_ = barrier;
      if (barriers_) barriers_->on_alignment_started(barrier.checkpoint_id);
    }
    received_.insert(channel);
    if (exactly_once_ || barrier.stop_with_savepoint) gate_->block(channel);
    return maybe_aligned();
  }

  absl::Status maybe_aligned() {
    if (!aligning_) return absl::OkStatus();
    for (int c = 0; c < gate_->channel_count(); ++c) {
      if (!finished_[static_cast<std::size_t>(c)] && received_.count(c) == 0) {
        return absl::OkStatus();
      }
    }
    const CheckpointBarrier barrier = *aligning_;
    aligning_.reset();
    received_.clear();
    last_aligned_ = barrier.checkpoint_id;
    absl::Status s = barriers_ ? barriers_->on_aligned_barrier(barrier) : absl::OkStatus();
    gate_->unblock_all();
    return s;
  }

  std::shared_ptr<InputGate<T>> gate_;
  Output<T>* head_;
  BarrierHandler* barriers_;
  const bool exactly_once_;
  WatermarkValve valve_;
  int open_channels_;
  std::vector<bool> finished_;
  std::optional<CheckpointBarrier> aligning_;
  std::set<int> received_;
  std::int64_t last_aligned_ = 0;
  std::atomic<std::int64_t> watermark_{kMinWatermark};
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_INPUT_PROCESSOR_H_
