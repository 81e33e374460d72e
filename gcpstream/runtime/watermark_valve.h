#ifndef GCPSTREAM_RUNTIME_WATERMARK_VALVE_H_
#define GCPSTREAM_RUNTIME_WATERMARK_VALVE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "gcpstream/api/record.h"

namespace gcpstream::runtime {

// Combines the watermarks of several inputs (exchange channels, or a reader's splits) into
// one: the minimum over the inputs that are active (not idle, not finished). It only ever
// advances. When every unfinished input is idle, the combined status is idle.
// Single-threaded.
class WatermarkValve {
 public:
  explicit WatermarkValve(int inputs) : inputs_(static_cast<std::size_t>(inputs)) {}

  struct Change {
    std::optional<std::int64_t> watermark;  // set when the combined watermark advanced
    std::optional<bool> idle;               // set when the combined idleness flipped
  };

  Change on_watermark(int input, std::int64_t watermark_ms);
  Change on_status(int input, bool idle);
  // The input ended: it no longer holds the watermark back.
  Change on_finished(int input);
  // Adds an input (a newly assigned split); returns its index.
  int add_input();

  std::int64_t current() const { return emitted_; }
  bool idle() const { return idle_; }

 private:
  struct Input {
    std::int64_t watermark = kMinWatermark;
    bool idle = false;
    bool finished = false;
  };
  Change recompute();

  std::vector<Input> inputs_;
  std::int64_t emitted_ = kMinWatermark;
  bool idle_ = false;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_WATERMARK_VALVE_H_
