#ifndef GCPSTREAM_BIGQUERY_SOURCE_VIEW_MATERIALIZATION_H_
#define GCPSTREAM_BIGQUERY_SOURCE_VIEW_MATERIALIZATION_H_

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/bigquery/admin/table_admin.h"

namespace gcpstream::bigquery {

// BigQuerySource's materialize_views (docs/bigquery.md, "Reading a view"): the Storage Read API
// reads table storage only, so a view is read through a query job that selects from it.

// The GoogleSQL that reads `view`: "SELECT `a`, `b` FROM `project.dataset.view`". The selected
// fields are folded into the SELECT (a view's SELECT * would be billed for every column) when
// each is a plain column name (letters, digits, '_', not starting with a digit); otherwise, a
// nested path say, the query selects * and the read session keeps the projection. A row
// restriction is never folded: it is not SQL, and stays on the session, so a caller with one
// passes no fields (the result must keep the columns the restriction names).
// INVALID_ARGUMENT when a part of the name holds a backquote, a backslash or a line break (it
// could not be quoted as one identifier).
absl::StatusOr<std::string> MaterializingQuery(const TableRef& view,
                                               const std::vector<std::string>& selected_fields);

// Asks BigQuery what `table` is (one tables.get; a transient failure is retried on the recovery
// schedule, each wait interrupted by `cancelled`, which may be null). A view, logical
// ("VIEW") or materialized ("MATERIALIZED_VIEW"): the MaterializingQuery that reads it; any
// other type: nullopt (read the table directly). A failure keeps its code (NOT_FOUND for a
// table that does not exist) and names the table; CANCELLED when cancelled. Blocking.
absl::StatusOr<std::optional<std::string>> ViewQueryFor(
    const TableAdmin& admin, const TableRef& table, const std::vector<std::string>& selected_fields,
    const std::atomic<bool>* cancelled);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SOURCE_VIEW_MATERIALIZATION_H_
