#ifndef GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_REST_SERVICE_H_
#define GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_REST_SERVICE_H_

#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "tests/fakes/bigquery/fake_store.h"

namespace gcpstream::testing::bigquery_fake {

// Registers the BigQuery v2 REST calls the sink needs on `server`, over `store`:
//   POST  /bigquery/v2/projects/P/datasets                 datasets.insert
//   GET   /bigquery/v2/projects/P/datasets/D               datasets.get
//   POST  /bigquery/v2/projects/P/datasets/D/tables        tables.insert
//   GET   /bigquery/v2/projects/P/datasets/D/tables/T      tables.get
//   PATCH /bigquery/v2/projects/P/datasets/D/tables/T      tables.patch (If-Match: etag)
//   PUT   /bigquery/v2/projects/P/datasets/D/tables/T      tables.update (If-Match: etag)
//   GET   /bigquery/v2/projects/P/datasets/D/tables/T/data tabledata.list (maxResults,
//         startIndex, pageToken), the visible rows in the {"f":[{"v":...}]} shape
// and the fake's own controls:
//   POST  /fake/v1/options        {"unavailableOnAppend", "loseResponseOnAppend",
//                                  "stallOnAppend", "stallMs", "unavailableOnFlush",
//                                  "resourceExhaustedFrom", "resourceExhaustedCount",
//                                  "appendLatencyMs", "streamIdleExpirySeconds",
//                                  "tablePropagationMs"}
//   POST  /fake/v1/clock:advance  {"seconds": S}
// Errors use the v2 error body: {"error": {"code", "message", "status", "errors": [{"reason"}]}}
// with 400 invalid, 404 notFound, 409 duplicate, 412 conditionNotMet. Bodies over 10 MB and
// JSON nested deeper than 64 levels answer 400.
void RegisterRestRoutes(httplib::Server& server, std::shared_ptr<FakeStore> store);

// The REST answer helpers every BigQuery fake route shares: a JSON body with an HTTP status
// (invalid UTF-8 replaced); a status as the v2 error body (see above: INVALID_ARGUMENT 400,
// NOT_FOUND 404, ALREADY_EXISTS 409, FAILED_PRECONDITION 412, anything else 500); and the
// request body as a JSON object (empty: {}), INVALID_ARGUMENT over 10 MB or 64 levels.
void ReplyJson(httplib::Response& res, int http, const nlohmann::json& body);
void ReplyStatus(httplib::Response& res, const absl::Status& status);
absl::StatusOr<nlohmann::json> ParseRestBody(const httplib::Request& req);

// A visible row (RowDecoder's shape) in tabledata.list's shape for `schema`.
nlohmann::json ToTableDataRow(const nlohmann::json& row, const Schema& schema);

}  // namespace gcpstream::testing::bigquery_fake

#endif  // GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_REST_SERVICE_H_
