#ifndef GCPSTREAM_RUNTIME_INPUT_PROCESSOR_H_
#define GCPSTREAM_RUNTIME_INPUT_PROCESSOR_H_

#include <memory>
#include <utility>

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
};

// Receives checkpoint barriers from a network input (implemented by the subtask).
class BarrierHandler {
 public:
  virtual ~BarrierHandler() = default;
  // A barrier arrived on `channel` of a gate with `channels` channels.
  virtual absl::Status on_barrier(int channel, const CheckpointBarrier& barrier) = 0;
  // `channel` ended: barriers will never arrive on it.
  virtual absl::Status on_channel_finished(int channel) = 0;
};

// Reads an InputGate into the head of the chain: records in order, watermarks combined over
// channels (WatermarkValve), barriers handed to the BarrierHandler.
template <typename T>
class NetworkInput final : public InputProcessor {
 public:
  NetworkInput(std::shared_ptr<InputGate<T>> gate, Output<T>* head, BarrierHandler* barriers)
      : gate_(std::move(gate)),
        head_(head),
        barriers_(barriers),
        valve_(gate_->channel_count()),
        open_channels_(gate_->channel_count()) {}

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

 private:
  absl::Status apply(const WatermarkValve::Change& change) {
    if (change.idle && *change.idle) {
      if (absl::Status s = head_->emit_watermark_status(true); !s.ok()) return s;
    }
    if (change.idle && !*change.idle) {
      if (absl::Status s = head_->emit_watermark_status(false); !s.ok()) return s;
    }
    if (change.watermark) return head_->emit_watermark(*change.watermark);
    return absl::OkStatus();
  }

  absl::Status on_event(int channel, const ChannelEvent& event) {
    switch (event.kind) {
      case ChannelEvent::Kind::kWatermark:
        return apply(valve_.on_watermark(channel, event.watermark_ms));
      case ChannelEvent::Kind::kWatermarkStatus:
        return apply(valve_.on_status(channel, event.idle));
      case ChannelEvent::Kind::kBarrier:
        if (barriers_ == nullptr) return absl::OkStatus();
        return barriers_->on_barrier(channel, event.barrier);
      case ChannelEvent::Kind::kEndOfPartition: {
        --open_channels_;
        if (barriers_ != nullptr) {
          if (absl::Status s = barriers_->on_channel_finished(channel); !s.ok()) return s;
        }
        return apply(valve_.on_finished(channel));
      }
    }
    return absl::OkStatus();
  }

  std::shared_ptr<InputGate<T>> gate_;
  Output<T>* head_;
  BarrierHandler* barriers_;
  WatermarkValve valve_;
  int open_channels_;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_INPUT_PROCESSOR_H_
