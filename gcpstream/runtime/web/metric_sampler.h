#ifndef GCPSTREAM_RUNTIME_WEB_METRIC_SAMPLER_H_
#define GCPSTREAM_RUNTIME_WEB_METRIC_SAMPLER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gcpstream/runtime/job_status.h"
#include "gcpstream/runtime/metric_registry.h"

namespace gcpstream::runtime::web {

// One subtask of a task (chain) at the latest sample.
struct SubtaskSample {
  int subtask = 0;
  // numRecordsIn of the chain's first operator; for a source, what it read (its numRecordsOut).
  std::int64_t records_in = 0;
  // numRecordsOut of the chain's last operators; for a sink, what it received (numRecordsIn).
  std::int64_t records_out = 0;
  double records_in_per_second = 0;
  double records_out_per_second = 0;
  // Shares of the last sampling interval (0..1) the subtask thread spent blocked on its output
  // or an in-flight cap, waiting for input, and working (task metrics accumulated*Time).
  double back_pressured_ratio = 0;
  double idle_ratio = 0;
  double busy_ratio = 0;
  // The watermark the subtask's input passed on (a source: the watermark it emitted); nullopt
  // before the first one.
  std::optional<std::int64_t> watermark;
};

struct TaskSample {
  int task = 0;  // JobPlan::Task::id
  std::string name;
  std::vector<SubtaskSample> subtasks;
};

// A point of the job's recent history, for charts.
struct HistoryPoint {
  std::int64_t timestamp_ms = 0;               // wall clock
  double records_in_per_second = 0;            // what the sources emitted
  double records_out_per_second = 0;           // what the sinks received
  std::map<int, double> back_pressured_ratio;  // by task: the highest of its subtasks
};

// Turns periodic metric snapshots into per-subtask rates and ratios and a bounded history
// (the last `history_size` samples). sample() is called by one thread (the dashboard's
// sampler); the getters from any thread.
class MetricSampler {
 public:
  explicit MetricSampler(std::size_t history_size = 300) : history_size_(history_size) {}

  void sample(const std::vector<MetricSample>& metrics, const JobPlan& plan, std::int64_t now_ms);

  std::vector<TaskSample> tasks() const;
  std::vector<HistoryPoint> history() const;

 private:
  struct Previous {
    std::int64_t at_ms = 0;
    std::map<std::string, double> values;  // by "<task>/<subtask>/<metric>"
  };
  // delta per second of `key` against the previous sample (a counter that went back, as after
  // a restart, counts from zero).
  double rate(const std::string& key, double value, double seconds) const;

  const std::size_t history_size_;
  mutable std::mutex mu_;
  Previous previous_;
  std::vector<TaskSample> tasks_;
  std::deque<HistoryPoint> history_;
};

}  // namespace gcpstream::runtime::web

#endif  // GCPSTREAM_RUNTIME_WEB_METRIC_SAMPLER_H_
