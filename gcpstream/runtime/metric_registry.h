#ifndef GCPSTREAM_RUNTIME_METRIC_REGISTRY_H_
#define GCPSTREAM_RUNTIME_METRIC_REGISTRY_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "gcpstream/api/metrics.h"

namespace gcpstream::runtime {

// A metric's identity: labels (job, operator, subtask, ...) and a dotted name that includes the
// nested group path ("destination.orders.recordsSend").
struct MetricSample {
  enum class Kind { kCounter, kGauge, kHistogram };
  std::map<std::string, std::string> labels;
  std::string name;
  Kind kind = Kind::kCounter;
  double value = 0;              // counters and gauges
  Histogram::Snapshot histogram;  // histograms
};

class MetricGroupImpl;

// Owns every metric group of a process (one per job run, typically). Thread-safe: groups are
// created from subtask threads while reporters read snapshots.
class MetricRegistry {
 public:
  MetricRegistry();
  ~MetricRegistry();

  // A root group with the given labels, e.g. {{"job","wc"},{"operator","Map"},{"subtask","0"}}.
  // The same labels return the same group.
  MetricGroup& group(std::map<std::string, std::string> labels);

  // Every metric right now. Gauges are evaluated on the calling thread.
  std::vector<MetricSample> snapshot() const;

  // Replaces the gauges of the groups whose labels include all of `labels` by their current
  // value, so nothing reads an object that is about to be destroyed (a finished subtask's).
  void freeze(const std::map<std::string, std::string>& labels);
  // The same for one group (as returned by group()).
  void freeze(MetricGroup& group);

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<MetricGroupImpl>> roots_;
};

// The Prometheus text exposition of a snapshot: gcpstream_<name> with the labels; dots and
// other characters Prometheus does not allow in names become '_'. Histograms are exposed as
// summaries (quantiles 0.5/0.95/0.99, _count).
std::string ToPrometheusText(const std::vector<MetricSample>& samples);

// A JSON document of a snapshot: {"metrics":[{"name":..,"labels":{..},"value":..}, ...]}.
std::string ToJson(const std::vector<MetricSample>& samples);

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_METRIC_REGISTRY_H_
