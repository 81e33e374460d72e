#ifndef GCPSTREAM_RUNTIME_OUTPUT_H_
#define GCPSTREAM_RUNTIME_OUTPUT_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gcpstream/api/record.h"

namespace gcpstream::runtime {

// The untyped half of an operator's input: events that travel with the records.
class OutputBase {
 public:
  virtual ~OutputBase() = default;
  // Event-time progress (ms). Never called with a lower value than before.
  virtual absl::Status emit_watermark(std::int64_t watermark_ms) = 0;
  // The upstream has (no longer) data for now; an idle input does not hold watermarks back.
  virtual absl::Status emit_watermark_status(bool idle) = 0;
};

// Where an operator sends records: the next operator of the chain, a fan-out, or an exchange.
// Subtask thread only. A non-OK status from collect() means the record was not processed and
// the subtask fails.
template <typename T>
class Output : public OutputBase {
 public:
  [[nodiscard]] virtual absl::Status collect(StreamRecord<T>&& record) = 0;
};

// Sends every record and event to several outputs (copies for all but the last).
template <typename T>
class BroadcastOutput final : public Output<T> {
 public:
  explicit BroadcastOutput(std::vector<Output<T>*> outputs) : outputs_(std::move(outputs)) {}

  absl::Status collect(StreamRecord<T>&& record) override {
    for (std::size_t i = 0; i + 1 < outputs_.size(); ++i) {
      StreamRecord<T> copy = record;
      absl::Status status = outputs_[i]->collect(std::move(copy));
      if (!status.ok()) return status;
    }
    return outputs_.back()->collect(std::move(record));
  }
  absl::Status emit_watermark(std::int64_t watermark_ms) override {
    for (auto* out : outputs_) {
      absl::Status status = out->emit_watermark(watermark_ms);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
  absl::Status emit_watermark_status(bool idle) override {
    for (auto* out : outputs_) {
      absl::Status status = out->emit_watermark_status(idle);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

 private:
  std::vector<Output<T>*> outputs_;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_OUTPUT_H_
