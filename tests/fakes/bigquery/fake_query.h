#ifndef GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_QUERY_H_
#define GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_QUERY_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/fakes/bigquery/fake_store.h"

namespace gcpstream::testing::bigquery_fake {

// The GoogleSQL shapes the fake's query jobs evaluate — what a source reading a table, a view or
// a filtered projection issues, not SQL at large:
//   SELECT * | col[, col...] FROM `p.d.t` | p.d.t | d.t [WHERE <restriction>] [;]
// Keywords are case-insensitive; columns are top-level names, bare or backquoted, matched
// case-insensitively; the
// WHERE clause takes the comparisons RowRestriction evaluates (fake_row_restriction.h). A table
// without a project is the job's project's. A logical view (a table resource with view.query)
// is expanded when its own query has one of these shapes (at most 8 views deep), and so is a
// materialized view (materializedView.query: BigQuery answers from fresh data). Anything else
// — a join, an aggregate, a function — fails the job with reason "invalidQuery" and a message
// saying the fake does not evaluate it; an unknown table fails with reason "notFound"
// ("Not found: Table p:d.t"), an unknown column with "Unrecognized name: c".
struct QueryResult {
  nlohmann::json fields;  // the result's schema.fields
  std::vector<nlohmann::json> rows;
};
absl::StatusOr<QueryResult> RunQuery(const FakeStore& store, const std::string& sql,
                                     const std::string& project);
// The (project, dataset) of the table a query of those shapes reads, when it parses: where a job
// that names no location runs (BigQuery infers it from the tables the query references).
std::optional<std::pair<std::string, std::string>> QueryDataset(const std::string& sql,
                                                                const std::string& project);

}  // namespace gcpstream::testing::bigquery_fake

#endif  // GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_QUERY_H_
