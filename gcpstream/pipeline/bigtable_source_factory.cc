#include "gcpstream/pipeline/bigtable_source_factory.h"

#include "gcpstream/bigtable/source/bigtable_source.h"
#include "gcpstream/pipeline/record_json.h"
#include "re2/re2.h"

namespace gcpstream::pipeline {

PipelineRecord BigtableRowToPipelineRecord(const bigtable::BigtableRow& row,
                                           const std::optional<std::string>& family) {
  PipelineRecord record;
  PutBytesField(record.fields, "_row_key", row.key);
  // Several versions of a column can arrive (a filter of the user's own, a service that
  // ignored the limit): the newest wins, whatever the order.
  std::map<std::string, const bigtable::BigtableCell*> newest;
  for (const bigtable::BigtableCell& cell : row.cells) {
    const std::string name = family ? cell.qualifier : cell.family + ":" + cell.qualifier;
    auto [it, added] = newest.emplace(name, &cell);
    if (!added && cell.timestamp_micros > it->second->timestamp_micros) it->second = &cell;
  }
  for (const auto& [name, cell] : newest) PutBytesField(record.fields, name, cell->value);
  return record;
}

absl::StatusOr<PipelineSource> MakeBigtablePipelineSource(const BigtableSourceSpec& spec) {
  auto builder = bigtable::BigtableSource<PipelineRecord>::builder();
  builder.table(connector::TableDestination::of(spec.project, spec.instance, spec.table))
      .max_rows_per_fetch(spec.max_rows_per_fetch)
      .max_bytes_per_fetch(spec.max_bytes_per_fetch);
  for (const auto& [start, end] : spec.row_ranges) builder.row_range(start, end);
  for (const auto& prefix : spec.prefixes) builder.prefix(prefix);
  for (const auto& key : spec.row_keys) builder.row_key(key);
  google::bigtable::v2::RowFilter filter;
  if (spec.family) {
    auto* chain = filter.mutable_chain();
    chain->add_filters()->set_family_name_regex_filter(RE2::QuoteMeta(*spec.family));
    chain->add_filters()->set_cells_per_column_limit_filter(1);
  } else {
    filter.set_cells_per_column_limit_filter(1);
  }
  builder.filter(std::move(filter));
  if (spec.app_profile_id) builder.app_profile_id(*spec.app_profile_id);
  if (spec.emulator_endpoint) builder.emulator_endpoint(*spec.emulator_endpoint);
  if (spec.service_account_key_file) {
    builder.service_account_key_file(*spec.service_account_key_file);
  }
  builder.deserializer([family = spec.family](const bigtable::BigtableRow& row,
                                              Collector<PipelineRecord>& out) -> absl::Status {
    out.collect(BigtableRowToPipelineRecord(row, family));
    return absl::OkStatus();
  });
  auto source = builder.build();
  if (!source.ok()) return source.status();
  return PipelineSource::of(*std::move(source), "bigtable");
}

}  // namespace gcpstream::pipeline
