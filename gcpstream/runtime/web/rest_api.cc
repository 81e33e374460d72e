#include "gcpstream/runtime/web/rest_api.h"

#include <algorithm>
#include <map>
#include <optional>

namespace gcpstream::runtime::web {
namespace {

using nlohmann::json;

json WatermarkJson(const std::optional<std::int64_t>& watermark) {
  return watermark ? json(*watermark) : json(nullptr);
}

json CheckpointJson(const CheckpointStats& c) {
  return {
      {"id", c.id},
      {"status", CheckpointStatusName(c.status)},
      {"is_savepoint", c.is_savepoint},
      {"trigger_timestamp", c.trigger_timestamp_ms},
      {"latest_ack_timestamp", c.latest_ack_timestamp_ms},
      {"end_to_end_duration", c.duration_ms},
      {"alignment_duration", c.alignment_duration_ms},
      {"state_size", c.state_size_bytes},
      {"num_subtasks", c.num_subtasks},
      {"num_acknowledged_subtasks", c.num_acknowledged_subtasks},
      {"external_path", c.external_path.empty() ? json(nullptr) : json(c.external_path)},
      {"failure_message", c.failure_message.empty() ? json(nullptr) : json(c.failure_message)},
  };
}

json MinMaxAvg(const std::vector<std::int64_t>& values) {
  if (values.empty()) return {{"min", 0}, {"max", 0}, {"avg", 0}};
  std::int64_t sum = 0;
  for (auto v : values) sum += v;
  return {{"min", *std::min_element(values.begin(), values.end())},
          {"max", *std::max_element(values.begin(), values.end())},
          {"avg", sum / static_cast<std::int64_t>(values.size())}};
}

json Error(const std::string& message) { return {{"errors", {message}}}; }

// "/jobs/abc/plan" -> {"jobs", "abc", "plan"} (empty segments dropped).
std::vector<std::string> Segments(std::string_view path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) out.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// A vertex id: digits only, within int.
std::optional<int> VertexId(const std::string& text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return std::stoi(text);
}

}  // namespace

const char* BackPressureLevel(double ratio) {
  if (ratio <= 0.10) return "ok";
  if (ratio <= 0.50) return "low";
  return "high";
}

nlohmann::json OverviewJson(const JobStatusSnapshot& job, std::int64_t now_ms) {
  const std::int64_t end = job.end_time_ms > 0 ? job.end_time_ms : now_ms;
  int subtasks = 0;
  for (const auto& t : job.plan.tasks) subtasks += t.parallelism;
  return {{"jobs",
           {{{"jid", job.job_id},
             {"name", job.job_name},
             {"state", JobStateName(job.state)},
             {"start-time", job.start_time_ms},
             {"end-time", job.end_time_ms > 0 ? job.end_time_ms : -1},
             {"duration", job.start_time_ms > 0 ? end - job.start_time_ms : 0},
             {"restarts", job.restarts},
             {"parallelism", job.parallelism},
             {"tasks", {{"total", job.plan.tasks.size()}, {"subtasks", subtasks}}}}}}};
}

nlohmann::json PlanJson(const JobStatusSnapshot& job) {
  json nodes = json::array();
  std::map<int, int> task_of;
  for (const auto& op : job.plan.operators) task_of[op.id] = op.task;
  for (const auto& task : job.plan.tasks) {
    json inputs = json::array();
    json operators = json::array();
    for (int id : task.operators) {
      const auto& op = job.plan.operators[static_cast<std::size_t>(id)];
      operators.push_back({{"id", op.id}, {"name", op.name}, {"uid", op.uid}, {"kind", op.kind}});
    }
    int num = 0;
    for (const auto& e : job.plan.edges) {
      if (e.chained || e.target != task.operators.front()) continue;
      inputs.push_back({{"num", num++},
                        {"id", task_of[e.source]},
                        {"ship_strategy", e.ship_strategy},
                        {"exchange", "pipelined_bounded"}});
    }
    nodes.push_back({{"id", task.id},
                     {"description", task.name},
                     {"parallelism", task.parallelism},
                     {"operators", operators},
                     {"inputs", inputs}});
  }
  json edges = json::array();
  for (const auto& e : job.plan.edges) {
    edges.push_back({{"source", e.source},
                     {"target", e.target},
                     {"ship_strategy", e.ship_strategy},
                     {"chained", e.chained}});
  }
  return {
      {"plan",
       {{"jid", job.job_id}, {"name", job.job_name}, {"nodes", nodes}, {"operator-edges", edges}}}};
}

nlohmann::json JobDetailsJson(const JobStatusSnapshot& job, const std::vector<TaskSample>& tasks,
                              std::int64_t now_ms) {
  json out = OverviewJson(job, now_ms)["jobs"][0];
  out["now"] = now_ms;
  json vertices = json::array();
  std::map<int, const TaskSample*> by_task;
  for (const auto& t : tasks) by_task[t.task] = &t;
  for (const auto& task : job.plan.tasks) {
    json subtasks = json::array();
    std::int64_t in = 0, out_records = 0;
    double in_rate = 0, out_rate = 0, bp = 0;
    auto it = by_task.find(task.id);
    if (it != by_task.end()) {
      for (const auto& s : it->second->subtasks) {
        in += s.records_in;
        out_records += s.records_out;
        in_rate += s.records_in_per_second;
        out_rate += s.records_out_per_second;
        bp = std::max(bp, s.back_pressured_ratio);
        subtasks.push_back({{"subtask", s.subtask},
                            {"read-records", s.records_in},
                            {"write-records", s.records_out},
                            {"read-records-per-second", s.records_in_per_second},
                            {"write-records-per-second", s.records_out_per_second},
                            {"backpressure-ratio", s.back_pressured_ratio},
                            {"idle-ratio", s.idle_ratio},
                            {"busy-ratio", s.busy_ratio},
                            {"watermark", WatermarkJson(s.watermark)}});
      }
    }
    vertices.push_back({{"id", task.id},
                        {"name", task.name},
                        {"parallelism", task.parallelism},
                        {"status", JobStateName(job.state)},
                        {"metrics",
                         {{"read-records", in},
                          {"write-records", out_records},
                          {"read-records-per-second", in_rate},
                          {"write-records-per-second", out_rate}}},
                        {"backpressure-ratio", bp},
                        {"backpressure-level", BackPressureLevel(bp)},
                        {"subtasks", subtasks}});
  }
  out["vertices"] = vertices;
  out["plan"] = PlanJson(job)["plan"];
  return out;
}

nlohmann::json CheckpointsJson(const JobStatusSnapshot& job) {
  json history = json::array();
  int in_progress = 0;
  std::vector<std::int64_t> durations, sizes, alignments;
  const CheckpointStats* completed = nullptr;
  const CheckpointStats* savepoint = nullptr;
  const CheckpointStats* failed = nullptr;
  for (auto it = job.checkpoints.rbegin(); it != job.checkpoints.rend(); ++it) {
    history.push_back(CheckpointJson(*it));
    switch (it->status) {
      case CheckpointStats::Status::kInProgress:
        ++in_progress;
        break;
      case CheckpointStats::Status::kCompleted:
        durations.push_back(it->duration_ms);
        sizes.push_back(it->state_size_bytes);
        alignments.push_back(it->alignment_duration_ms);
        if (it->is_savepoint) {
          if (savepoint == nullptr) savepoint = &*it;
        } else if (completed == nullptr) {
          completed = &*it;
        }
        break;
      case CheckpointStats::Status::kFailed:
        if (failed == nullptr) failed = &*it;
        break;
    }
  }
  json restored = nullptr;
  if (job.restored) {
    restored = {{"id", job.restored->id},
                {"restore_timestamp", job.restore_timestamp_ms},
                {"is_savepoint", job.restored->is_savepoint},
                {"external_path", job.restored->external_path}};
  }
  auto or_null = [](const CheckpointStats* c) { return c ? CheckpointJson(*c) : json(nullptr); };
  return {
      {"counts",
       {{"restored", job.restored ? 1 : 0},
        {"total", job.completed_checkpoints + job.failed_checkpoints + in_progress},
        {"in_progress", in_progress},
        {"completed", job.completed_checkpoints},
        {"failed", job.failed_checkpoints}}},
      {"summary",
       {{"end_to_end_duration", MinMaxAvg(durations)},
        {"state_size", MinMaxAvg(sizes)},
        {"alignment_duration", MinMaxAvg(alignments)}}},
      {"latest",
       {{"completed", or_null(completed)},
        {"savepoint", or_null(savepoint)},
        {"failed", or_null(failed)},
        {"restored", restored}}},
      {"history", history},
  };
}

nlohmann::json ExceptionsJson(const JobStatusSnapshot& job) {
  json entries = json::array();
  json root = nullptr;
  json root_time = nullptr;
  for (auto it = job.exceptions.rbegin(); it != job.exceptions.rend(); ++it) {
    entries.push_back({{"exceptionName", it->code},
                       {"stacktrace", it->message},
                       {"timestamp", it->timestamp_ms},
                       {"taskName", it->task},
                       {"attempt", it->attempt},
                       {"rootCause", it->root_cause}});
    if (root.is_null() && it->root_cause) {
      root = it->code + ": " + it->message;
      root_time = it->timestamp_ms;
    }
  }
  return {{"root-exception", root},
          {"timestamp", root_time},
          {"exceptionHistory", {{"entries", entries}, {"truncated", false}}}};
}

nlohmann::json WatermarksJson(const JobStatusSnapshot& job, const std::vector<TaskSample>& tasks) {
  json subtasks = json::array();
  for (const auto& t : tasks) {
    for (const auto& s : t.subtasks) {
      subtasks.push_back({{"vertex", t.task},
                          {"task", t.name},
                          {"subtask", s.subtask},
                          {"watermark", WatermarkJson(s.watermark)}});
    }
  }
  json alignment = json::array();
  for (const auto& g : job.alignment) {
    json readers = json::object();
    for (const auto& [reader, wm] : g.reader_watermarks) readers[reader] = wm;
    alignment.push_back({{"group", g.group},
                         {"max-drift", g.max_drift_ms},
                         {"max-allowed-watermark", g.max_allowed_watermark},
                         {"readers", readers},
                         {"updated", g.updated_ms}});
  }
  return {{"subtasks", subtasks}, {"alignment", alignment}};
}

nlohmann::json BackPressureJson(const TaskSample& task, std::int64_t now_ms) {
  json subtasks = json::array();
  double max_ratio = 0;
  for (const auto& s : task.subtasks) {
    max_ratio = std::max(max_ratio, s.back_pressured_ratio);
    subtasks.push_back({{"subtask", s.subtask},
                        {"backpressure-level", BackPressureLevel(s.back_pressured_ratio)},
                        {"ratio", s.back_pressured_ratio},
                        {"idleRatio", s.idle_ratio},
                        {"busyRatio", s.busy_ratio}});
  }
  return {{"status", "ok"},
          {"backpressure-level", BackPressureLevel(max_ratio)},
          {"end-timestamp", now_ms},
          {"subtasks", subtasks}};
}

nlohmann::json VertexWatermarksJson(const TaskSample& task) {
  json out = json::array();
  for (const auto& s : task.subtasks) {
    out.push_back({{"id", std::to_string(s.subtask) + ".currentInputWatermark"},
                   {"value", s.watermark ? std::to_string(*s.watermark) : "NaN"}});
  }
  return out;
}

nlohmann::json OperatorMetricsJson(const std::vector<MetricSample>& metrics) {
  // operator -> metric -> subtask -> value
  std::map<std::string, std::map<std::string, std::map<std::string, json>>> grouped;
  for (const auto& m : metrics) {
    auto op = m.labels.find("operator");
    if (op == m.labels.end()) continue;
    auto sub = m.labels.find("subtask");
    const std::string subtask = sub == m.labels.end() ? "" : sub->second;
    json value;
    if (m.kind == MetricSample::Kind::kHistogram) {
      value = {{"count", m.histogram.count},
               {"p50", m.histogram.p50},
               {"p95", m.histogram.p95},
               {"p99", m.histogram.p99},
               {"max", m.histogram.max}};
    } else {
      value = m.value;
    }
    grouped[op->second][m.name][subtask] = std::move(value);
  }
  json operators = json::array();
  for (const auto& [name, by_metric] : grouped) {
    json list = json::array();
    for (const auto& [metric, by_subtask] : by_metric) {
      json entry = {{"id", metric}, {"subtasks", by_subtask}};
      bool numeric = true;
      double sum = 0;
      for (const auto& [s, v] : by_subtask) {
        if (!v.is_number()) {
          numeric = false;
          break;
        }
        sum += v.get<double>();
      }
      if (numeric) entry["sum"] = sum;
      list.push_back(std::move(entry));
    }
    operators.push_back({{"operator", name}, {"metrics", list}});
  }
  return {{"operators", operators}};
}

nlohmann::json HistoryJson(const std::vector<HistoryPoint>& history, std::int64_t interval_ms) {
  json samples = json::array();
  for (const auto& p : history) {
    json bp = json::object();
    for (const auto& [task, ratio] : p.back_pressured_ratio) bp[std::to_string(task)] = ratio;
    samples.push_back({{"timestamp", p.timestamp_ms},
                       {"records-in-per-second", p.records_in_per_second},
                       {"records-out-per-second", p.records_out_per_second},
                       {"backpressure-ratio", bp}});
  }
  return {{"interval-ms", interval_ms}, {"samples", samples}};
}

ApiResponse RestApi::get(std::string_view path) const {
  auto reply = [](const json& body, int status = 200) {
    return ApiResponse{status, body.dump(-1, ' ', false, json::error_handler_t::replace)};
  };
  const std::vector<std::string> parts = Segments(path);
  const std::int64_t now = sources_.now_ms();
  if (parts.size() == 1 && parts[0] == "config") {
    return reply({{"refresh-interval", sources_.refresh_interval_ms},
                  {"timezone-name", "UTC"},
                  {"features", {{"web-submit", false}, {"web-cancel", false}}}});
  }
  if (parts.empty() || parts[0] != "jobs") return reply(Error("Not found"), 404);
  const JobStatusSnapshot job = sources_.job();
  if (parts.size() == 2 && parts[1] == "overview") return reply(OverviewJson(job, now));
  if (parts.size() < 2 || parts[1] != job.job_id) {
    return reply(Error("Job " + (parts.size() < 2 ? std::string() : parts[1]) +
                       " not found (this process runs job " + job.job_id + ")"),
                 404);
  }
  if (parts.size() == 2) return reply(JobDetailsJson(job, sources_.tasks(), now));
  if (parts.size() == 3) {
    if (parts[2] == "plan") return reply(PlanJson(job));
    if (parts[2] == "checkpoints") return reply(CheckpointsJson(job));
    if (parts[2] == "exceptions") return reply(ExceptionsJson(job));
    if (parts[2] == "watermarks") return reply(WatermarksJson(job, sources_.tasks()));
    if (parts[2] == "metrics") return reply(OperatorMetricsJson(sources_.metrics()));
    if (parts[2] == "history") {
      return reply(HistoryJson(sources_.history(), sources_.refresh_interval_ms));
    }
  }
  if (parts.size() == 5 && parts[2] == "vertices") {
    if (const std::optional<int> vertex = VertexId(parts[3])) {
      for (const auto& t : sources_.tasks()) {
        if (t.task != *vertex) continue;
        if (parts[4] == "backpressure") return reply(BackPressureJson(t, now));
        if (parts[4] == "watermarks") return reply(VertexWatermarksJson(t));
        return reply(Error("Not found: vertices have backpressure and watermarks"), 404);
      }
    }
    return reply(Error("Vertex " + parts[3] + " not found"), 404);
  }
  return reply(Error("Not found"), 404);
}

}  // namespace gcpstream::runtime::web
