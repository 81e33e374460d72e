#ifndef GCPSTREAM_RUNTIME_WEB_REST_API_H_
#define GCPSTREAM_RUNTIME_WEB_REST_API_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gcpstream/runtime/job_status.h"
#include "gcpstream/runtime/metric_registry.h"
#include "gcpstream/runtime/web/metric_sampler.h"

namespace gcpstream::runtime::web {

// The JSON documents of the dashboard's REST API (docs/dashboard.md). Shapes follow Flink's
// REST API where it has the same resource (job details, plan, checkpoints, exceptions,
// back pressure, watermarks), in Flink's kebab-case keys; timestamps are wall-clock ms since
// the Unix epoch, durations ms, sizes bytes, ratios 0..1.
nlohmann::json OverviewJson(const JobStatusSnapshot& job, std::int64_t now_ms);
nlohmann::json JobDetailsJson(const JobStatusSnapshot& job, const std::vector<TaskSample>& tasks,
                              std::int64_t now_ms);
nlohmann::json PlanJson(const JobStatusSnapshot& job);
nlohmann::json CheckpointsJson(const JobStatusSnapshot& job);
nlohmann::json ExceptionsJson(const JobStatusSnapshot& job);
nlohmann::json WatermarksJson(const JobStatusSnapshot& job, const std::vector<TaskSample>& tasks);
nlohmann::json BackPressureJson(const TaskSample& task, std::int64_t now_ms);
nlohmann::json VertexWatermarksJson(const TaskSample& task);
nlohmann::json OperatorMetricsJson(const std::vector<MetricSample>& metrics);
nlohmann::json HistoryJson(const std::vector<HistoryPoint>& history, std::int64_t interval_ms);

// "ok" (ratio <= 0.1), "low" (<= 0.5) or "high": Flink's back-pressure levels.
const char* BackPressureLevel(double ratio);

struct ApiResponse {
  int status = 200;
  std::string body;  // JSON
};

// Answers GET requests of the API from the job's live sources. Thread-safe (the sources are).
class RestApi {
 public:
  struct Sources {
    std::function<JobStatusSnapshot()> job;
    std::function<std::vector<TaskSample>()> tasks;
    std::function<std::vector<HistoryPoint>()> history;
    std::function<std::vector<MetricSample>()> metrics;
    std::function<std::int64_t()> now_ms;
    std::int64_t refresh_interval_ms = 1000;
  };
  explicit RestApi(Sources sources) : sources_(std::move(sources)) {}

  // `path` without the query string. Unknown paths and job ids answer 404 with
  // {"errors": ["..."]} (Flink's error shape).
  ApiResponse get(std::string_view path) const;

 private:
  Sources sources_;
};

}  // namespace gcpstream::runtime::web

#endif  // GCPSTREAM_RUNTIME_WEB_REST_API_H_
