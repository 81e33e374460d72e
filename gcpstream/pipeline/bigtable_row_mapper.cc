#include "gcpstream/pipeline/bigtable_row_mapper.h"

#include <fmt/format.h>

#include "absl/strings/numbers.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/pipeline/cell_timestamp.h"

namespace gcpstream::pipeline {

absl::StatusOr<BigtableRowMapper> BigtableRowMapper::make(const BigtableMappingSpec& spec) {
  BigtableRowMapper m;
  m.spec_ = spec;
  GCP_ASSIGN_OR_RETURN(m.row_key_, RecordTemplate::parse(spec.row_key));
  for (const auto& [qualifier, text] : spec.columns) {
    GCP_ASSIGN_OR_RETURN(RecordTemplate t, RecordTemplate::parse(text));
    m.columns_.emplace_back(qualifier, std::move(t));
  }
  for (const auto& [qualifier, text] : spec.add_to_cell) {
    GCP_ASSIGN_OR_RETURN(RecordTemplate t, RecordTemplate::parse(text));
    m.add_to_cell_.emplace_back(qualifier, std::move(t));
  }
  return m;
}

absl::StatusOr<bigtable::RowMutationEntry> BigtableRowMapper::map(
    const PipelineRecord& record) const {
  GCP_ASSIGN_OR_RETURN(std::string key, row_key_.render(record));
  std::optional<std::int64_t> micros;
  if (spec_.timestamp) {
    GCP_ASSIGN_OR_RETURN(micros, CellTimestampMicros(*spec_.timestamp, record));
  }
  bigtable::RowMutationEntry entry(std::move(key));
  for (const auto& [qualifier, tmpl] : columns_) {
    absl::StatusOr<std::string> value = tmpl.render(record);
    if (!value.ok()) {
      if (spec_.skip_missing_fields) continue;
      return value.status();
    }
    if (micros) {
      entry.set_cell(spec_.family, qualifier, *micros, std::move(*value));
    } else {
      entry.set_cell(spec_.family, qualifier, std::move(*value));
    }
  }
  for (const auto& [qualifier, tmpl] : add_to_cell_) {
    absl::StatusOr<std::string> text = tmpl.render(record);
    if (!text.ok()) {
      if (spec_.skip_missing_fields) continue;
      return text.status();
    }
    std::int64_t n = 0;
    if (!absl::SimpleAtoi(*text, &n)) {
      return absl::InvalidArgumentError(
          fmt::format("to_bigtable.add_to_cell.{}: '{}' is not a signed 64-bit integer", qualifier,
                      text->size() > 64 ? text->substr(0, 64) + "..." : *text));
    }
    entry.add_to_cell(spec_.family, qualifier, micros.value_or(0),
                      bigtable::AggregateValue::int64(n));
  }
  return entry;
}

}  // namespace gcpstream::pipeline
