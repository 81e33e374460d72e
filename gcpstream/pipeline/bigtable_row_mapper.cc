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
  auto parse_all = [](const std::vector<std::pair<std::string, std::string>>& in,
                      std::vector<std::pair<std::string, RecordTemplate>>& out) -> absl::Status {
    for (const auto& [qualifier, text] : in) {
      GCP_ASSIGN_OR_RETURN(RecordTemplate t, RecordTemplate::parse(text));
      out.emplace_back(qualifier, std::move(t));
    }
    return absl::OkStatus();
  };
  GCP_RETURN_IF_ERROR(parse_all(spec.add_to_cell, m.add_to_cell_));
  GCP_RETURN_IF_ERROR(parse_all(spec.increment, m.increment_));
  // A constant amount is checked now rather than at the first record.
  for (const auto* section : {&spec.add_to_cell, &spec.increment}) {
    for (const auto& [qualifier, text] : *section) {
      std::int64_t n = 0;
      if (text.find('{') == std::string::npos && !absl::SimpleAtoi(text, &n)) {
        return absl::InvalidArgumentError(fmt::format(
            "to_bigtable.{}.{}: {} is not a signed 64-bit integer",
            section == &spec.add_to_cell ? "add_to_cell" : "increment", qualifier, text));
      }
    }
  }
  GCP_RETURN_IF_ERROR(parse_all(spec.append, m.append_));
  GCP_RETURN_IF_ERROR(parse_all(spec.otherwise, m.otherwise_));
  if (spec.when && spec.when->kind == BigtableMappingSpec::Predicate::Kind::kLatestValueEquals) {
    GCP_ASSIGN_OR_RETURN(m.when_value_, RecordTemplate::parse(spec.when->value));
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
    GCP_ASSIGN_OR_RETURN(std::optional<std::int64_t> n,
                         Integer(record, "add_to_cell", qualifier, tmpl));
    if (!n) continue;  // a missing field, skipped
    entry.add_to_cell(spec_.family, qualifier, micros.value_or(0),
                      bigtable::AggregateValue::int64(*n));
  }
  return entry;
}

absl::StatusOr<std::optional<std::int64_t>> BigtableRowMapper::Integer(
    const PipelineRecord& record, const char* section, const std::string& qualifier,
    const RecordTemplate& tmpl) const {
  absl::StatusOr<std::string> text = tmpl.render(record);
  if (!text.ok()) {
    if (spec_.skip_missing_fields) return std::optional<std::int64_t>();
    return text.status();
  }
  std::int64_t n = 0;
  // Digits with an optional minus sign, nothing else: no blanks, no plus sign.
  const bool digits =
      !text->empty() &&
      text->find_first_not_of("0123456789", text->front() == '-') == std::string::npos &&
      *text != "-";
  if (!digits || !absl::SimpleAtoi(*text, &n)) {
    return absl::InvalidArgumentError(
        fmt::format("to_bigtable.{}.{}: '{}' is not a signed 64-bit integer", section, qualifier,
                    text->size() > 64 ? text->substr(0, 64) + "..." : *text));
  }
  return std::optional<std::int64_t>(n);
}

absl::StatusOr<bigtable::ConditionalRequest> BigtableRowMapper::map_conditional(
    const PipelineRecord& record) const {
  if (!spec_.when) {
    return absl::InvalidArgumentError("to_bigtable.when is required by the CONDITIONAL mode");
  }
  GCP_ASSIGN_OR_RETURN(bigtable::RowMutationEntry on_match, map(record));
  bigtable::ConditionalFilter predicate = bigtable::ConditionalFilter::row_exists();
  using Kind = BigtableMappingSpec::Predicate::Kind;
  if (spec_.when->kind == Kind::kCellExists) {
    predicate = bigtable::ConditionalFilter::cell_exists(spec_.family, spec_.when->qualifier);
  } else if (spec_.when->kind == Kind::kLatestValueEquals) {
    GCP_ASSIGN_OR_RETURN(std::string value, when_value_->render(record));
    predicate = bigtable::ConditionalFilter::latest_cell_value_equals(
        spec_.family, spec_.when->qualifier, std::move(value));
  }
  bigtable::ConditionalRequest request(on_match.row_key(), std::move(predicate));
  request.on_match() = std::move(on_match);
  std::optional<std::int64_t> micros;
  if (spec_.timestamp) {
    GCP_ASSIGN_OR_RETURN(micros, CellTimestampMicros(*spec_.timestamp, record));
  }
  for (const auto& [qualifier, tmpl] : otherwise_) {
    absl::StatusOr<std::string> value = tmpl.render(record);
    if (!value.ok()) {
      if (spec_.skip_missing_fields) continue;
      return value.status();
    }
    if (micros) {
      request.otherwise().set_cell(spec_.family, qualifier, *micros, std::move(*value));
    } else {
      request.otherwise().set_cell(spec_.family, qualifier, std::move(*value));
    }
  }
  return request;
}

absl::StatusOr<bigtable::ReadModifyWriteRequest> BigtableRowMapper::map_read_modify_write(
    const PipelineRecord& record) const {
  GCP_ASSIGN_OR_RETURN(std::string key, row_key_.render(record));
  bigtable::ReadModifyWriteRequest request(std::move(key));
  for (const auto& [qualifier, tmpl] : append_) {
    absl::StatusOr<std::string> value = tmpl.render(record);
    if (!value.ok()) {
      if (spec_.skip_missing_fields) continue;
      return value.status();
    }
    request.append(spec_.family, qualifier, std::move(*value));
  }
  for (const auto& [qualifier, tmpl] : increment_) {
    GCP_ASSIGN_OR_RETURN(std::optional<std::int64_t> n,
                         Integer(record, "increment", qualifier, tmpl));
    if (n) request.increment(spec_.family, qualifier, *n);
  }
  return request;
}

}  // namespace gcpstream::pipeline
