#include "gcpstream/pipeline/run_report.h"

#include <fmt/format.h>

#include "gcpstream/pipeline/pipeline_job.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::pipeline {
namespace {

std::string Operator(const runtime::MetricSample& m) {
  auto it = m.labels.find("operator");
  return it == m.labels.end() ? std::string() : it->second;
}

// 1234567 -> "1,234,567".
std::string Count(double v) {
  std::string digits = fmt::format("{:.0f}", v);
  std::string out;
  const std::size_t start = digits[0] == '-' ? 1 : 0;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > start && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

ProgressSample SampleProgress(const std::vector<runtime::MetricSample>& metrics) {
  ProgressSample s;
  double transform_in = 0;
  double transform_out = 0;
  for (const auto& m : metrics) {
    const std::string op = Operator(m);
    if (op == kSourceNode && m.name == "numRecordsOut") s.records_in += m.value;
    if (op == kSourceNode && m.name == "numRecordsInErrors") s.invalid += m.value;
    if (op == kTransformNode && m.name == "numRecordsIn") transform_in += m.value;
    if (op == kTransformNode && m.name == "numRecordsOut") transform_out += m.value;
    if (op != kSinkNode) continue;
    if (m.name == "numRecordsSend") s.records_out += m.value;
    if (m.name == "inFlightMessages" || m.name == "inFlightEntries" || m.name == "inFlightTasks") {
      s.in_flight += m.value;
    }
    if (m.name == "numRecordsSendErrors") s.send_errors += m.value;
    if (m.name == "recordsRefused") s.refused += m.value;
    if (m.name == "recordsDelivered") s.delivered += m.value;
    if (m.name == "recordsSkipped") s.skipped += m.value;
    // Counters a sink registers ahead of time (Cloud Tasks' retried codes) may still be zero.
    if (m.value != 0 && m.name.rfind("errorClass.", 0) == 0 && m.name.size() > 18 &&
        m.name.compare(m.name.size() - 7, 7, ".errors") == 0) {
      s.error_classes[m.name.substr(11, m.name.size() - 18)] += m.value;
    }
  }
  s.filtered = transform_in - transform_out;
  return s;
}

std::string FormatProgress(const ProgressSample& now, const ProgressSample& previous,
                           std::chrono::milliseconds interval, const RunObservations& run) {
  const double seconds = std::max(0.001, interval.count() / 1000.0);
  std::string line =
      fmt::format("in {} ({}/s)  out {} ({}/s)  in-flight {}", Count(now.records_in),
                  Count((now.records_in - previous.records_in) / seconds), Count(now.records_out),
                  Count((now.records_out - previous.records_out) / seconds), Count(now.in_flight));
  if (now.invalid > 0) line += fmt::format("  invalid {}", Count(now.invalid));
  if (now.send_errors > 0) line += fmt::format("  failed {}", Count(now.send_errors));
  if (run.last_checkpoint_id) {
    line += fmt::format("  checkpoint {} ({} ms)", *run.last_checkpoint_id,
                        run.last_checkpoint_duration.count());
  } else {
    line += "  no checkpoint yet";
  }
  return line;
}

std::string FormatSummary(const runtime::JobResult& result, const RunObservations& run) {
  const ProgressSample s = SampleProgress(result.metrics);
  const double seconds = std::max(0.001, result.duration.count() / 1000.0);
  const double active_seconds = std::max(
      0.001, (result.duration - std::min(result.duration, run.idle_before_stop)).count() / 1000.0);
  // What the service confirmed: not what failed, nor what was still unanswered at the end (a
  // cancelled run's in-flight records).
  const double stored = s.delivered;
  std::string out;
  out +=
      fmt::format("job {} ({}): {}\n", result.job_name, result.job_id,
                  result.status.ok() ? std::string("finished") : fmt::format("{}", result.status));
  out += fmt::format("  records    in {}, invalid {}, filtered {}, out {}, skipped {}, failed {}\n",
                     Count(s.records_in), Count(s.invalid), Count(s.filtered), Count(stored),
                     Count(s.skipped), Count(s.send_errors));
  if (run.idle_before_stop.count() > 0 && s.records_in > 0) {
    out += fmt::format(
        "  duration   {:.1f} s ({:.1f} s active, then idle until the stop), throughput over the "
        "active time {}/s in, {}/s out\n",
        seconds, active_seconds, Count(s.records_in / active_seconds),
        Count(stored / active_seconds));
  } else {
    out += fmt::format("  duration   {:.1f} s, throughput {}/s in, {}/s out\n", seconds,
                       Count(s.records_in / seconds), Count(stored / seconds));
  }
  out += fmt::format("  checkpoints {} completed in this run", run.checkpoints_completed);
  if (result.last_completed_checkpoint) {
    out += fmt::format(
        ", last {} ({})", *result.last_completed_checkpoint,
        result.last_checkpoint_path.empty() ? "in memory" : result.last_checkpoint_path);
  }
  out += "\n";
  if (run.savepoint_path) out += fmt::format("  savepoint  {}\n", *run.savepoint_path);
  out += fmt::format("  restarts   {}\n", result.restarts);
  // Service errors per gRPC code, as the sink counted them: repaired ones (a topic or table
  // created after NOT_FOUND) included; records lost to the failure handler are "failed" above.
  if (s.error_classes.empty()) {
    // "none" would read as "nothing went wrong" beside a failed job whose failure the sink never
    // counted (a source, the runtime, a sink failing before its first request).
    out += result.status.ok() ? "  errors     none\n"
                              : "  errors     none counted by the sink (the failure is on the "
                                "first line)\n";
  } else {
    out += "  errors    ";
    for (const auto& [code, n] : s.error_classes) out += fmt::format(" {} {}", code, Count(n));
    out += " (service errors by code, repaired ones included)\n";
  }
  return out;
}

}  // namespace gcpstream::pipeline
