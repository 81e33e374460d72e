#include "gcpstream/bigquery/source/bigquery_read_options.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gcpstream::bigquery {

absl::Status BigQueryReadOptions::validate() const {
  constexpr char kWho[] = "BigQuerySource: ";
  std::vector<std::string> parts = absl::StrSplit(table, '/');
  if (parts.size() != 6 || parts[0] != "projects" || parts[2] != "datasets" ||
      parts[4] != "tables" || parts[1].empty() || parts[3].empty() || parts[5].empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kWho, "table must be projects/P/datasets/D/tables/T, got '", table, "'"));
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

}  // namespace gcpstream::bigquery
