#include "gcpstream/runtime/web/metric_sampler.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "gcpstream/api/metrics.h"

namespace gcpstream::runtime::web {
namespace {

std::string Label(const MetricSample& m, const char* name) {
  auto it = m.labels.find(name);
  return it == m.labels.end() ? std::string() : it->second;
}

std::string OpKey(const std::string& op, int subtask, std::string_view metric) {
  return "op:" + op + "/" + std::to_string(subtask) + "/" + std::string(metric);
}

std::string TaskKey(const std::string& task, int subtask, std::string_view metric) {
  return "task:" + task + "/" + std::to_string(subtask) + "/" + std::string(metric);
}

// A watermark gauge's value as a watermark: nullopt for "none yet" (the minimum).
std::optional<std::int64_t> AsWatermark(double value) {
  if (!std::isfinite(value) || value <= -9.2e18) return std::nullopt;
  if (value >= 9.2e18) return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(value);
}

}  // namespace

double MetricSampler::rate(const std::string& key, double value, double seconds) const {
  if (seconds <= 0) return 0;
  auto it = previous_.values.find(key);
  if (it == previous_.values.end()) return 0;
  const double delta = value >= it->second ? value - it->second : value;
  return delta / seconds;
}

void MetricSampler::sample(const std::vector<MetricSample>& metrics, const JobPlan& plan,
                           std::int64_t now_ms) {
  std::map<std::string, double> values;
  for (const auto& m : metrics) {
    if (m.kind == MetricSample::Kind::kHistogram) continue;
    const std::string subtask = Label(m, "subtask");
    const std::string task = Label(m, "task");
    const std::string op = Label(m, "operator");
    if (!task.empty()) {
      values["task:" + task + "/" + subtask + "/" + m.name] = m.value;
    } else if (!op.empty()) {
      values["op:" + op + "/" + subtask + "/" + m.name] = m.value;
    }
  }
  auto value = [&](const std::string& key) -> std::optional<double> {
    auto it = values.find(key);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };

  std::lock_guard lock(mu_);
  const double seconds =
      previous_.at_ms > 0 ? static_cast<double>(now_ms - previous_.at_ms) / 1000.0 : 0.0;
  std::map<int, const JobPlan::Operator*> ops;
  for (const auto& op : plan.operators) ops[op.id] = &op;
  std::set<int> has_chained_consumer;
  for (const auto& e : plan.edges) {
    if (e.chained) has_chained_consumer.insert(e.source);
  }

  std::vector<TaskSample> tasks;
  HistoryPoint point;
  point.timestamp_ms = now_ms;
  auto ratio = [&](const std::string& key, double v) {
    return std::clamp(rate(key, v, seconds) / 1000.0, 0.0, 1.0);
  };
  for (const auto& task : plan.tasks) {
    TaskSample t;
    t.task = task.id;
    t.name = task.name;
    const JobPlan::Operator* head = ops.at(task.operators.front());
    double max_bp = 0;
    for (int i = 0; i < task.parallelism; ++i) {
      SubtaskSample s;
      s.subtask = i;
      {
        // A source task takes in what its source read from the service.
        const std::string key = OpKey(
            head->name, i,
            head->kind == "source" ? metric_names::kNumRecordsOut : metric_names::kNumRecordsIn);
        const double in = value(key).value_or(0);
        s.records_in = static_cast<std::int64_t>(in);
        s.records_in_per_second = rate(key, in, seconds);
      }
      for (int id : task.operators) {
        if (has_chained_consumer.count(id) > 0) continue;
        // A sink passes on what it received to write.
        const JobPlan::Operator* tail = ops.at(id);
        const std::string key = OpKey(
            tail->name, i,
            tail->kind == "sink" ? metric_names::kNumRecordsIn : metric_names::kNumRecordsOut);
        const double out = value(key).value_or(0);
        s.records_out += static_cast<std::int64_t>(out);
        s.records_out_per_second += rate(key, out, seconds);
      }
      const std::string bp_key =
          TaskKey(task.name, i, metric_names::kAccumulatedBackPressuredTimeMs);
      const std::string idle_key = TaskKey(task.name, i, metric_names::kAccumulatedIdleTimeMs);
      const std::string busy_key = TaskKey(task.name, i, metric_names::kAccumulatedBusyTimeMs);
      s.back_pressured_ratio = ratio(bp_key, value(bp_key).value_or(0));
      s.idle_ratio = ratio(idle_key, value(idle_key).value_or(0));
      s.busy_ratio = ratio(busy_key, value(busy_key).value_or(0));
      max_bp = std::max(max_bp, s.back_pressured_ratio);
      auto wm = value(TaskKey(task.name, i, metric_names::kCurrentInputWatermark));
      if (!wm) wm = value(OpKey(head->name, i, metric_names::kCurrentOutputWatermark));
      if (wm) s.watermark = AsWatermark(*wm);
      t.subtasks.push_back(std::move(s));
    }
    point.back_pressured_ratio[task.id] = max_bp;
    tasks.push_back(std::move(t));
  }
  for (const auto& op : plan.operators) {
    for (int i = 0; i < op.parallelism; ++i) {
      if (op.kind == "source") {
        const std::string key = OpKey(op.name, i, metric_names::kNumRecordsOut);
        point.records_in_per_second += rate(key, value(key).value_or(0), seconds);
      } else if (op.kind == "sink") {
        const std::string key = OpKey(op.name, i, metric_names::kNumRecordsIn);
        point.records_out_per_second += rate(key, value(key).value_or(0), seconds);
      }
    }
  }
  tasks_ = std::move(tasks);
  if (seconds > 0) {
    history_.push_back(std::move(point));
    while (history_.size() > history_size_) history_.pop_front();
  }
  previous_.at_ms = now_ms;
  previous_.values = std::move(values);
}

std::vector<TaskSample> MetricSampler::tasks() const {
  std::lock_guard lock(mu_);
  return tasks_;
}

std::vector<HistoryPoint> MetricSampler::history() const {
  std::lock_guard lock(mu_);
  return {history_.begin(), history_.end()};
}

}  // namespace gcpstream::runtime::web
