#ifndef GCPSTREAM_PIPELINE_RUN_REPORT_H_
#define GCPSTREAM_PIPELINE_RUN_REPORT_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gcpstream/runtime/job_result.h"
#include "gcpstream/runtime/metric_registry.h"

namespace gcpstream::pipeline {

// Totals of a pipeline job read from its metrics (operators "source", "transform", "sink").
struct ProgressSample {
  double records_in = 0;   // emitted by the source
  double invalid = 0;      // read by the source but not decodable (numRecordsInErrors)
  double filtered = 0;     // dropped by keep/drop
  double records_out = 0;  // handed to the sink's service (numRecordsSend, failed ones included)
  double in_flight = 0;    // sent, not yet answered (inFlightMessages / inFlightEntries)
  double send_errors = 0;  // handed to the failure handler
  double refused = 0;      // of those, refused before any RPC (recordsRefused)
  double delivered = 0;    // confirmed by the service (recordsDelivered)
  double skipped = 0;      // skipped by the sink's serializer
  std::map<std::string, double> error_classes;  // gRPC code -> failed records
};

// Sums the metrics of a snapshot (MetricRegistry::snapshot() or JobResult::metrics).
ProgressSample SampleProgress(const std::vector<runtime::MetricSample>& metrics);

// What the run observed besides metrics.
struct RunObservations {
  std::int64_t checkpoints_completed = 0;
  std::optional<std::int64_t> last_checkpoint_id;
  std::chrono::milliseconds last_checkpoint_duration{0};
  std::optional<std::string> savepoint_path;
  // How long the source had emitted nothing when the run was stopped for idleness
  // (--stop-when-idle); the summary's throughput leaves it out.
  std::chrono::milliseconds idle_before_stop{0};
};

// One progress line: rates are per second over `interval` since `previous`.
// "in 12,345 (4,100/s)  out 12,000 (4,050/s)  in-flight 345  checkpoint 7 (18 ms)".
std::string FormatProgress(const ProgressSample& now, const ProgressSample& previous,
                           std::chrono::milliseconds interval, const RunObservations& run);

// The end-of-run summary: status, records in/filtered/out ("out" counts the records the
// service confirmed, recordsDelivered: neither failed ones nor ones still unanswered when the
// run ended), duration, throughput over the active time (the duration less
// `run.idle_before_stop`), checkpoints, restarts, and failures by class.
std::string FormatSummary(const runtime::JobResult& result, const RunObservations& run);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_RUN_REPORT_H_
