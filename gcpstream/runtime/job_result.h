#ifndef GCPSTREAM_RUNTIME_JOB_RESULT_H_
#define GCPSTREAM_RUNTIME_JOB_RESULT_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gcpstream/api/lineage.h"
#include "gcpstream/runtime/metric_registry.h"

namespace gcpstream::runtime {

// What execute() returns when a job ends.
struct JobResult {
  // OK when every source finished and every sink flushed; CANCELLED when cancelled; otherwise
  // the root cause (its gRPC-derived code preserved) of the failure that ended the job.
  absl::Status status;
  std::string job_name;
  std::string job_id;
  std::chrono::milliseconds duration{0};
  int restarts = 0;
  std::optional<std::int64_t> last_completed_checkpoint;
  std::string last_checkpoint_path;  // directory of the last completed checkpoint, if persisted
  std::vector<MetricSample> metrics;  // final values of every metric
  // The job's lineage: per source/sink node name, what it read or wrote.
  std::vector<std::pair<std::string, LineageVertex>> lineage;

  // Sum of a metric over the subtasks of an operator (by the operator's name).
  double metric(std::string_view operator_name, std::string_view name) const {
    double sum = 0;
    for (const auto& m : metrics) {
      auto it = m.labels.find("operator");
      if (it != m.labels.end() && it->second == operator_name && m.name == name) sum += m.value;
    }
    return sum;
  }
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_JOB_RESULT_H_
