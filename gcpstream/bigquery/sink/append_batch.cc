#include "gcpstream/bigquery/sink/append_batch.h"

#include "gcpstream/bigquery/sink/append_retry.h"

namespace gcpstream::bigquery {

std::vector<std::string> AppendBatch::row_bytes() const {
  std::vector<std::string> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(r.bytes);
  return out;
}

void ReportWritten(connector::SinkOutcomeListener<BigQueryRow>& listener,
                   const AppendBatch& batch) {
  std::vector<connector::SinkOutcome<BigQueryRow>> out;
  out.reserve(batch.tokens.size());
  for (auto token : batch.tokens) out.push_back({token, absl::OkStatus(), std::nullopt});
  listener.on_outcomes(std::move(out), nullptr);
}

void ReportFailed(connector::SinkOutcomeListener<BigQueryRow>& listener, AppendBatch& batch,
                  const absl::Status& status) {
  std::vector<connector::SinkOutcome<BigQueryRow>> out;
  out.reserve(batch.rows.size());
  for (std::size_t i = 0; i < batch.rows.size(); ++i) {
    out.push_back({batch.tokens[i], status, std::move(batch.rows[i])});
  }
  listener.on_outcomes(std::move(out), nullptr);
}

void ReportRowErrors(connector::SinkOutcomeListener<BigQueryRow>& listener, AppendBatch& batch,
                     const storage_v1::AppendRowsResponse& response) {
  std::vector<absl::Status> statuses(batch.rows.size());
  for (const auto& e : response.row_errors()) {
    if (e.index() >= 0 && static_cast<std::size_t>(e.index()) < statuses.size()) {
      statuses[static_cast<std::size_t>(e.index())] =
          MarkedStatus(absl::InvalidArgumentError(e.message()), kRowErrorPayload);
    }
  }
  std::vector<connector::SinkOutcome<BigQueryRow>> out;
  out.reserve(batch.rows.size());
  for (std::size_t i = 0; i < batch.rows.size(); ++i) {
    absl::Status s = statuses[i].ok()
                         ? MarkedStatus(absl::AbortedError("refused with its AppendRows request, "
                                                           "which another row failed"),
                                        kRefusedWithItsRequestPayload)
                         : statuses[i];
    out.push_back({batch.tokens[i], std::move(s), std::move(batch.rows[i])});
  }
  listener.on_outcomes(std::move(out), nullptr);
}

}  // namespace gcpstream::bigquery
