#ifndef GCPSTREAM_BIGQUERY_SCHEMA_SCHEMA_RECONCILIATION_H_
#define GCPSTREAM_BIGQUERY_SCHEMA_SCHEMA_RECONCILIATION_H_

#include <optional>

#include "absl/status/statusor.h"
#include "gcpstream/bigquery/schema/table_schema.h"

namespace gcpstream::bigquery {

// Which table schema changes the sink may make so the table accepts its rows
// (SchemaUpdateOptions). Both off by default: a table that lacks the rows' columns fails the
// job.
struct SchemaUpdateOptions {
  // Add the columns the rows carry and the table lacks (inside RECORDs too), always NULLABLE
  // (or REPEATED): BigQuery cannot add a REQUIRED column to an existing table.
  bool allow_new_fields = false;
  // Relax a REQUIRED table column the rows declare NULLABLE (or omit) to NULLABLE.
  bool allow_field_relaxation = false;
  bool any() const { return allow_new_fields || allow_field_relaxation; }
};

// The schema `live` must become so rows of `desired` fit, within what `options` allow: columns
// matched by name, case-insensitively, recursively through RECORDs; modes are never tightened
// and types never changed. Nothing when no change is needed or allowed (the service then keeps
// refusing what does not fit, which fails the job naming the mismatch). FAILED_PRECONDITION
// when a column exists with another type (or RECORD vs not): no allowed change fixes that.
absl::StatusOr<std::optional<TableSchema>> ReconcileSchema(const TableSchema& live,
                                                           const TableSchema& desired,
                                                           const SchemaUpdateOptions& options);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SCHEMA_SCHEMA_RECONCILIATION_H_
