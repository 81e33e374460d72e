#ifndef GCPSTREAM_API_WATERMARK_H_
#define GCPSTREAM_API_WATERMARK_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "gcpstream/api/record.h"

namespace gcpstream {

// Where a generator emits. Watermarks are event time in ms; a lower watermark than one
// already emitted is ignored by the runtime (watermarks never go back).
class WatermarkOutput {
 public:
  virtual ~WatermarkOutput() = default;
  virtual void emit_watermark(std::int64_t watermark_ms) = 0;
  // This output has no data for now: it no longer holds the combined watermark back.
  virtual void mark_idle() = 0;
  virtual void mark_active() = 0;
};

// Produces watermarks from the records of one split (or one reader). Subtask thread only.
template <typename T>
class WatermarkGenerator {
 public:
  virtual ~WatermarkGenerator() = default;
  virtual void on_event(const T& value, std::int64_t timestamp_ms, WatermarkOutput& output) = 0;
  // Called every auto-watermark interval (200 ms by default).
  virtual void on_periodic_emit(WatermarkOutput& output) = 0;
};

// Watermark alignment: sources in one group are kept within `max_drift` of the group's
// slowest watermark; the coordinator recomputes the group minimum every `update_interval`.
struct WatermarkAlignmentParams {
  std::string group;
  std::chrono::milliseconds max_drift{0};
  std::chrono::milliseconds update_interval{1000};
};

// How a source assigns event timestamps and generates watermarks. Immutable value; the
// `with_*` methods return modified copies. Thread-safe to share.
template <typename T>
class WatermarkStrategy {
 public:
  // (value, timestamp the source gave the record or kNoTimestamp) -> event time in ms.
  using TimestampAssigner = std::function<std::int64_t(const T&, std::int64_t)>;
  using GeneratorFactory = std::function<std::unique_ptr<WatermarkGenerator<T>>()>;

  // No watermarks at all (records keep whatever timestamp the source gave them).
  static WatermarkStrategy no_watermarks() { return WatermarkStrategy(nullptr); }

  // Watermark = highest timestamp seen - out_of_orderness - 1 ms, emitted periodically.
  static WatermarkStrategy for_bounded_out_of_orderness(std::chrono::milliseconds bound) {
    return WatermarkStrategy([bound] {
      return std::unique_ptr<WatermarkGenerator<T>>(new BoundedOutOfOrderness(bound.count()));
    });
  }
  // Timestamps never decrease: bounded out-of-orderness with a zero bound.
  static WatermarkStrategy for_monotonous_timestamps() {
    return for_bounded_out_of_orderness(std::chrono::milliseconds(0));
  }
  static WatermarkStrategy for_generator(GeneratorFactory factory) {
    return WatermarkStrategy(std::move(factory));
  }

  WatermarkStrategy with_timestamp_assigner(TimestampAssigner assigner) const {
    WatermarkStrategy copy = *this;
    copy.assigner_ = std::move(assigner);
    return copy;
  }
  // A split without records for `timeout` (processing time) is marked idle, so it stops
  // holding the watermark back; it becomes active again with its next record.
  WatermarkStrategy with_idleness(std::chrono::milliseconds timeout) const {
    WatermarkStrategy copy = *this;
    copy.idleness_ = timeout;
    return copy;
  }
  WatermarkStrategy with_watermark_alignment(
      std::string group, std::chrono::milliseconds max_drift,
      std::chrono::milliseconds update_interval = std::chrono::milliseconds(1000)) const {
    WatermarkStrategy copy = *this;
    copy.alignment_ = WatermarkAlignmentParams{std::move(group), max_drift, update_interval};
    return copy;
  }

  bool generates_watermarks() const { return factory_ != nullptr; }
  // A new generator (null for no_watermarks()). The idleness wrapper is applied by the
  // runtime, which owns the processing-time clock.
  std::unique_ptr<WatermarkGenerator<T>> create_generator() const {
    return factory_ ? factory_() : nullptr;
  }
  const TimestampAssigner& timestamp_assigner() const { return assigner_; }
  const std::optional<std::chrono::milliseconds>& idleness() const { return idleness_; }
  const std::optional<WatermarkAlignmentParams>& alignment() const { return alignment_; }

 private:
  class BoundedOutOfOrderness final : public WatermarkGenerator<T> {
   public:
    explicit BoundedOutOfOrderness(std::int64_t bound_ms)
        : bound_ms_(bound_ms), max_ts_(kMinWatermark + bound_ms + 1) {}
    void on_event(const T&, std::int64_t ts, WatermarkOutput&) override {
      max_ts_ = std::max(max_ts_, ts);
    }
    void on_periodic_emit(WatermarkOutput& output) override {
      output.emit_watermark(max_ts_ - bound_ms_ - 1);
    }

   private:
    std::int64_t bound_ms_;
    std::int64_t max_ts_;
  };

  explicit WatermarkStrategy(GeneratorFactory factory) : factory_(std::move(factory)) {}

  GeneratorFactory factory_;
  TimestampAssigner assigner_;
  std::optional<std::chrono::milliseconds> idleness_;
  std::optional<WatermarkAlignmentParams> alignment_;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_WATERMARK_H_
