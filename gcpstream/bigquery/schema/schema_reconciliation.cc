#include "gcpstream/bigquery/schema/schema_reconciliation.h"

#include <fmt/format.h>

#include "absl/strings/ascii.h"

namespace gcpstream::bigquery {
namespace {

bool SameName(const std::string& a, const std::string& b) {
  return absl::AsciiStrToLower(a) == absl::AsciiStrToLower(b);
}

// Widens `live` in place; `changed` is set when anything changed. `path` names the column.
absl::Status Reconcile(std::vector<TableFieldSchema>& live,
                       const std::vector<TableFieldSchema>& desired,
                       const SchemaUpdateOptions& options, const std::string& path, bool& changed) {
  // Relaxation: a REQUIRED live column the rows declare NULLABLE, or do not carry at all.
  if (options.allow_field_relaxation) {
    for (auto& l : live) {
      if (l.mode != FieldMode::kRequired) continue;
      bool required_by_rows = false;
      for (const auto& d : desired) {
        if (SameName(l.name, d.name)) required_by_rows = d.mode == FieldMode::kRequired;
      }
      if (!required_by_rows) {
        l.mode = FieldMode::kNullable;
        changed = true;
      }
    }
  }
  for (const auto& d : desired) {
    TableFieldSchema* match = nullptr;
    for (auto& l : live) {
      if (SameName(l.name, d.name)) match = &l;
    }
    const std::string name = path.empty() ? d.name : path + "." + d.name;
    if (match == nullptr) {
      if (!options.allow_new_fields) continue;
      TableFieldSchema added = d;
      if (added.mode == FieldMode::kRequired) added.mode = FieldMode::kNullable;
      live.push_back(std::move(added));
      changed = true;
      continue;
    }
    if (match->type != d.type) {
      return absl::FailedPreconditionError(fmt::format(
          "column {} is {} in the table and {} in the rows; no schema update changes a type", name,
          FieldTypeName(match->type), FieldTypeName(d.type)));
    }
    if (d.type == FieldType::kRecord) {
      absl::Status s = Reconcile(match->fields, d.fields, options, name, changed);
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<TableSchema>> ReconcileSchema(const TableSchema& live,
                                                           const TableSchema& desired,
                                                           const SchemaUpdateOptions& options) {
  TableSchema out = live;
  bool changed = false;
  absl::Status s = Reconcile(out.fields, desired.fields, options, "", changed);
  if (!s.ok()) return s;
  if (!changed) return std::optional<TableSchema>();
  return std::optional<TableSchema>(std::move(out));
}

}  // namespace gcpstream::bigquery
