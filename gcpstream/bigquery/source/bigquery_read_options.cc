#include "gcpstream/bigquery/source/bigquery_read_options.h"

#include <re2/re2.h>

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/connector/destinations.h"

namespace gcpstream::bigquery {

absl::Status BigQueryReadOptions::validate() const {
  constexpr char kWho[] = "BigQuerySource: ";
  if (query.empty()) {
    if (!connector::BigQueryTableDestination::parse(table)) {
      return absl::InvalidArgumentError(
          absl::StrCat(kWho, "table must be projects/P/datasets/D/tables/T, got '", table, "'"));
    }
    if (materialize_views) {
      if (snapshot_time) {
        return absl::InvalidArgumentError(absl::StrCat(
            kWho,
            "snapshot_time cannot go with materialize_views: a view is read through a query "
            "whose result table has no earlier version, so the session would fail"));
      }
      GCP_RETURN_IF_ERROR(validate_query_job());
    } else if (!query_location.empty() || !query_result_dataset.empty() ||
               reuse_query_result_within.count() != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          kWho,
          "query_location, query_result_dataset and reuse_query_result_within apply to a "
          "query source or with materialize_views only"));
    }
  } else {
    GCP_RETURN_IF_ERROR(validate_query());
  }
  if (max_stream_count < 0 || preferred_min_stream_count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kWho, "max_stream_count and preferred_min_stream_count must be >= 0"));
  }
  if (max_stream_count > 0 && preferred_min_stream_count > max_stream_count) {
    return absl::InvalidArgumentError(absl::StrCat(
        kWho, "preferred_min_stream_count (", preferred_min_stream_count,
        ") is above max_stream_count (", max_stream_count, "); BigQuery refuses that session"));
  }
  if (max_records_per_fetch < 1) {
    return absl::InvalidArgumentError(absl::StrCat(kWho, "max_records_per_fetch must be >= 1"));
  }
  if (retry_max_attempts < 1) {
    return absl::InvalidArgumentError(absl::StrCat(kWho, "retry_max_attempts must be >= 1"));
  }
  if (initial_retry_delay.count() < 0 || stall_timeout.count() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(kWho, "initial_retry_delay must be >= 0 and stall_timeout > 0"));
  }
  std::set<std::string> seen;
  for (const std::string& field : selected_fields) {
    if (field.empty())
      return absl::InvalidArgumentError(absl::StrCat(kWho, "an empty selected field"));
    if (!seen.insert(absl::AsciiStrToLower(field)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(kWho, "selected field '", field, "' is named twice"));
    }
  }
  if (row_restriction.size() > (1 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat(kWho, "row_restriction is ", row_restriction.size(), " bytes; at most 1 MiB"));
  }
  return absl::OkStatus();
}

absl::Status BigQueryReadOptions::validate_query() const {
  constexpr char kWho[] = "BigQuerySource: ";
  if (!table.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(kWho, "set table(...) or query(...), not both"));
  }
  if (parent_project.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kWho,
                     "a query source needs parent_project: the query names no table to take the "
                     "project from, and its job and read session are billed to it"));
  }
  if (snapshot_time) {
    return absl::InvalidArgumentError(absl::StrCat(
        kWho,
        "snapshot_time cannot go with query: the result table is created by the query and "
        "has no earlier version; write FOR SYSTEM_TIME AS OF in the query instead"));
  }
  if (materialize_views) {
    return absl::InvalidArgumentError(
        absl::StrCat(kWho,
                     "materialize_views goes with table(...), not query(...): a query reads views "
                     "already"));
  }
  if (query.size() > (1 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat(kWho, "the query is ", query.size(), " bytes; BigQuery takes at most 1 MiB"));
  }
  return validate_query_job();
}

absl::Status BigQueryReadOptions::validate_query_job() const {
  constexpr char kWho[] = "BigQuerySource: ";
  static const RE2 kDataset("[A-Za-z0-9_]+");
  if (!query_result_dataset.empty() &&
      (query_result_dataset.size() > 1024 || !RE2::FullMatch(query_result_dataset, kDataset))) {
    return absl::InvalidArgumentError(
        absl::StrCat(kWho, "query_result_dataset '", query_result_dataset,
                     "' is not a dataset id (letters, digits and underscores)"));
  }
  static const RE2 kLocation("[A-Za-z0-9-]{1,64}");
  if (!query_location.empty() && !RE2::FullMatch(query_location, kLocation)) {
    return absl::InvalidArgumentError(absl::StrCat(
        kWho, "query_location '", query_location.substr(0, 100),
        "' is not a BigQuery location (letters, digits and '-', like US, EU or europe-west4)"));
  }
  const auto window = reuse_query_result_within;
  if (window.count() < 0 || window > std::chrono::hours(24)) {
    return absl::InvalidArgumentError(
        absl::StrCat(kWho,
                     "reuse_query_result_within must be positive and at most 24 h (a query result "
                     "expires after about a day, so a longer window could never reuse one)"));
  }
  if (window.count() > 0 && query_location.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kWho,
                     "reuse_query_result_within needs query_location: BigQuery scopes a job to its "
                     "location, and a look-up without one sees only the US multi-region"));
  }
  if (window.count() > 0 && job_name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kWho, "reuse_query_result_within needs the job name the id is derived from"));
  }
  return absl::OkStatus();
}

}  // namespace gcpstream::bigquery
