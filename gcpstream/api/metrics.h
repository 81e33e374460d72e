#ifndef GCPSTREAM_API_METRICS_H_
#define GCPSTREAM_API_METRICS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace gcpstream {

// A monotonically increasing (or explicitly decremented) count. inc()/dec() are thread-safe
// and lock-free; get() may be called from any thread (the metric reporter's, typically).
class Counter {
 public:
  void inc(std::int64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  // Cheaper increment for counters only ever written by one thread (per-record counters on a
  // subtask thread): a plain load and store, still safe to read from any thread.
  void inc_single_writer(std::int64_t n = 1) {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  void dec(std::int64_t n = 1) { value_.fetch_sub(n, std::memory_order_relaxed); }
  std::int64_t get() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::int64_t> value_{0};
};

// Distribution of recent values (a sliding window of the last `window` updates).
// update() and snapshot() are thread-safe (a short mutex).
class Histogram {
 public:
  struct Snapshot {
    std::int64_t count = 0;  // all updates ever, not only the window
    double min = 0, max = 0, mean = 0, p50 = 0, p95 = 0, p99 = 0;
  };
  explicit Histogram(std::size_t window = 1024) : window_(window) {}
  void update(std::int64_t value);
  Snapshot snapshot() const;

 private:
  mutable std::mutex mu_;
  std::size_t window_;
  std::vector<std::int64_t> values_;  // ring buffer
  std::size_t next_ = 0;
  std::int64_t count_ = 0;
};

// A gauge is read on the reporter's thread: the function must be thread-safe and cheap
// (read an atomic, not walk a container another thread mutates).
using GaugeFunction = std::function<double()>;

// A named scope of metrics: job -> operator -> subtask, with optional nested groups.
//
// Registering a name twice returns the first registration (Flink keeps the first one too); a
// gauge frozen when its subtask closed (MetricRegistry::freeze) is replaced by the next
// registration, so after a restart gauges read the live attempt.
// Groups, counters and histograms live as long as the job's registry; references stay valid.
// Thread-safe.
class MetricGroup {
 public:
  virtual ~MetricGroup() = default;
  virtual Counter& counter(std::string_view name) = 0;
  virtual Histogram& histogram(std::string_view name) = 0;
  virtual void gauge(std::string_view name, GaugeFunction read) = 0;
  // A nested group whose name becomes part of the metric name ("destination" + "orders" ->
  // destination.orders.recordsSend).
  virtual MetricGroup& add_group(std::string_view name) = 0;
  // The scope components, e.g. {"job", "op", "subtask"} values (for logging).
  virtual std::string scope() const = 0;
};

// Standard metric names (Flink's), so an operator who knows Flink finds them.
namespace metric_names {
inline constexpr std::string_view kNumRecordsIn = "numRecordsIn";
inline constexpr std::string_view kNumRecordsOut = "numRecordsOut";
inline constexpr std::string_view kNumRecordsInErrors = "numRecordsInErrors";
inline constexpr std::string_view kNumRecordsSend = "numRecordsSend";
inline constexpr std::string_view kNumBytesSend = "numBytesSend";
inline constexpr std::string_view kNumRecordsSendErrors = "numRecordsSendErrors";
inline constexpr std::string_view kCurrentEmitEventTimeLag = "currentEmitEventTimeLag";
inline constexpr std::string_view kCurrentOutputWatermark = "currentOutputWatermark";
inline constexpr std::string_view kRecordsSkipped = "recordsSkipped";
inline constexpr std::string_view kCurrentInputWatermark = "currentInputWatermark";
// Task scope: milliseconds the subtask thread spent, since it started, blocked on its output
// (a full exchange channel, an in-flight cap), waiting for input, and doing work.
inline constexpr std::string_view kAccumulatedBackPressuredTimeMs = "accumulatedBackpressuredTime";
inline constexpr std::string_view kAccumulatedIdleTimeMs = "accumulatedIdleTime";
inline constexpr std::string_view kAccumulatedBusyTimeMs = "accumulatedBusyTime";
}  // namespace metric_names

}  // namespace gcpstream

#endif  // GCPSTREAM_API_METRICS_H_
