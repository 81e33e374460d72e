#include "gcpstream/runtime/watermark_valve.h"

#include <algorithm>

namespace gcpstream::runtime {

WatermarkValve::Change WatermarkValve::on_watermark(int input, std::int64_t watermark_ms) {
  auto& in = inputs_[static_cast<std::size_t>(input)];
  if (in.finished) return {};
  in.watermark = std::max(in.watermark, watermark_ms);
  in.idle = false;  // a watermark means the input is active
  return recompute();
}

WatermarkValve::Change WatermarkValve::on_status(int input, bool idle) {
  auto& in = inputs_[static_cast<std::size_t>(input)];
  if (in.finished) return {};
  in.idle = idle;
  return recompute();
}

WatermarkValve::Change WatermarkValve::on_finished(int input) {
  auto& in = inputs_[static_cast<std::size_t>(input)];
  in.finished = true;
  in.watermark = kMaxWatermark;
  return recompute();
}

int WatermarkValve::add_input() {
  inputs_.push_back(Input{});
  return static_cast<int>(inputs_.size() - 1);
}

WatermarkValve::Change WatermarkValve::recompute() {
  Change change;
  if (inputs_.empty()) return change;  // nothing to combine yet (e.g. no split assigned)
  bool any_active = false;
  bool all_finished = true;
  std::int64_t min = kMaxWatermark;
  for (const auto& in : inputs_) {
    if (!in.finished) all_finished = false;
    if (in.finished || in.idle) continue;
    any_active = true;
    min = std::min(min, in.watermark);
  }
  if (all_finished) {
    min = kMaxWatermark;
    any_active = true;
  }
  const bool idle = !any_active;
  if (idle != idle_) {
    idle_ = idle;
    change.idle = idle;
  }
  if (any_active && min > emitted_) {
    emitted_ = min;
    change.watermark = min;
  }
  return change;
}

}  // namespace gcpstream::runtime
