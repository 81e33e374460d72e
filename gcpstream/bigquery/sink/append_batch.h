#ifndef GCPSTREAM_BIGQUERY_SINK_APPEND_BATCH_H_
#define GCPSTREAM_BIGQUERY_SINK_APPEND_BATCH_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gcpstream/bigquery/client/write_stub.h"
#include "gcpstream/bigquery/sink/bigquery_serialization_schema.h"
#include "gcpstream/connector/sink_outcome.h"

namespace gcpstream::bigquery {

// Payload keys the client puts on the statuses it reports, so the adapter classifies without
// reading messages: a row the service named in row_errors, and a row refused only because the
// request it travelled in was refused for another row (resent, never routed).
inline constexpr char kRowErrorPayload[] = "gcpstream.bigquery/row_error";
inline constexpr char kRefusedWithItsRequestPayload[] = "gcpstream.bigquery/refused_with_request";

// The rows of one AppendRows request with the writer's tokens: what both Storage Write clients
// batch, send, and report back to the writer core.
struct AppendBatch {
  std::vector<std::uint64_t> tokens;
  std::vector<BigQueryRow> rows;
  std::int64_t bytes = 0;
  int attempt = 0;  // sends so far

  void add(BigQueryRow&& row, std::uint64_t token) {
    bytes += static_cast<std::int64_t>(row.bytes.size());
    rows.push_back(std::move(row));
    tokens.push_back(token);
  }
  // Whether `row_bytes` more would push the request past `max_bytes` (an empty batch takes any
  // row: a row alone is bounded by the writer's precheck).
  bool overflows(std::int64_t row_bytes, std::int64_t max_bytes) const {
    return !rows.empty() && bytes + row_bytes > max_bytes;
  }
  // The serialized rows, copied: the batch keeps its rows for a resend or a failure report.
  std::vector<std::string> row_bytes() const;
};

// Adds `row` to the batch being filled, `*current` (made on demand), the way both clients
// batch: a row that would push the request past `max_bytes` first sends what is there, and a
// batch that reached `max_bytes` is sent at once. `send` sends `*current` and resets it.
template <typename Batch, typename Send>
void AddToBatch(std::shared_ptr<Batch>& current, BigQueryRow&& row, std::uint64_t token,
                std::int64_t max_bytes, Send send) {
  if (current && current->overflows(static_cast<std::int64_t>(row.bytes.size()), max_bytes)) {
    send();
  }
  if (!current) current = std::make_shared<Batch>();
  current->add(std::move(row), token);
  if (current->bytes >= max_bytes) send();
}

// Reports every row of `batch` to `listener`: as written; as failed with `status` (each row
// handed back); or, for a request refused for some rows, the rows `response.row_errors` names
// as row errors (kRowErrorPayload) and the others as refused with their request
// (kRefusedWithItsRequestPayload, resent by the writer). The failure reports move the rows out.
void ReportWritten(connector::SinkOutcomeListener<BigQueryRow>& listener, const AppendBatch& batch);
void ReportFailed(connector::SinkOutcomeListener<BigQueryRow>& listener, AppendBatch& batch,
                  const absl::Status& status);
void ReportRowErrors(connector::SinkOutcomeListener<BigQueryRow>& listener, AppendBatch& batch,
                     const storage_v1::AppendRowsResponse& response);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_APPEND_BATCH_H_
