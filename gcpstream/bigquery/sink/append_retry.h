#ifndef GCPSTREAM_BIGQUERY_SINK_APPEND_RETRY_H_
#define GCPSTREAM_BIGQUERY_SINK_APPEND_RETRY_H_

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "gcpstream/bigquery/client/status_text.h"  // Describe
#include "gcpstream/bigquery/client/stream_appender.h"
#include "gcpstream/bigquery/sink/bigquery_writer_options.h"

namespace gcpstream::bigquery {

// What both Storage Write clients share about a failed append: whether it may heal by itself
// (the in-stream retry class: UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, INTERNAL,
// RESOURCE_EXHAUSTED, UNKNOWN without row errors, or a connection that ended unanswered), and
// the delay before attempt `attempt` + 1 (retry_initial_delay × retry_delay_multiplier^(attempt
// - 1), capped at retry_max_delay).
bool RetriableAppend(const AppendOutcome& outcome);
// The transient codes of that class, for the unary calls (CreateWriteStream, FlushRows).
bool TransientCode(absl::StatusCode code);
std::chrono::milliseconds AppendRetryDelay(const BigQueryWriterOptions& options, int attempt);

// `status` with `payload` set (the classification marks of default_stream_client.h).
absl::Status MarkedStatus(absl::Status status, const char* payload);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_APPEND_RETRY_H_
