#include "gcpstream/pipeline/spanner_change_stream_source_factory.h"

#include "gcpstream/api/status_macros.h"
#include "gcpstream/spanner/changestream/spanner_change_stream_source.h"
#include "gcpstream/spanner/client/value.h"

namespace gcpstream::pipeline {

using nlohmann::json;

namespace {

absl::StatusOr<json> Object(const std::optional<std::string>& text, const char* what) {
  if (!text) return json::object();
  json parsed = json::parse(*text, nullptr, false);
  if (parsed.is_null()) return json::object();  // present as JSON null: no columns
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Spanner change record: ", what, " is not a JSON object"));
  }
  return parsed;
}

}  // namespace

absl::StatusOr<std::vector<PipelineRecord>> DataChangeRecordToPipelineRecords(
    const spanner::DataChangeRecord& r) {
  std::vector<PipelineRecord> out;
  out.reserve(r.mods.size());
  const std::int64_t event_time = absl::ToUnixMillis(r.commit_timestamp);
  for (std::size_t i = 0; i < r.mods.size(); ++i) {
    const auto& mod = r.mods[i];
    PipelineRecord record;
    GCP_ASSIGN_OR_RETURN(json fields, Object(mod.new_values, "new_values"));
    GCP_ASSIGN_OR_RETURN(json keys, Object(mod.keys, "keys"));
    for (auto& [name, value] : keys.items()) fields[name] = value;
    if (mod.old_values) {
      GCP_ASSIGN_OR_RETURN(json old_values, Object(mod.old_values, "old_values"));
      fields["_old_values"] = std::move(old_values);
    }
    fields["_table"] = r.table_name;
    fields["_mod_type"] = r.mod_type;
    fields["_commit_timestamp"] = spanner::FormatTimestamp(r.commit_timestamp);
    fields["_server_transaction_id"] = r.server_transaction_id;
    fields["_record_sequence"] = r.record_sequence;
    fields["_value_capture_type"] = r.value_capture_type;
    fields["_transaction_tag"] = r.transaction_tag;
    fields["_mod_index"] = i;
    record.fields = std::move(fields);
    record.event_time_ms = event_time;
    out.push_back(std::move(record));
  }
  return out;
}

absl::StatusOr<PipelineSource> MakeSpannerChangeStreamPipelineSource(
    const SpannerChangeStreamSourceSpec& spec) {
  auto builder = spanner::SpannerChangeStreamSource<PipelineRecord>::builder();
  builder.database(connector::DatabaseDestination::of(spec.project, spec.instance, spec.database))
      .change_stream_name(spec.change_stream)
      .options(spec.options);
  if (spec.emulator_endpoint) builder.emulator_endpoint(*spec.emulator_endpoint);
  if (spec.service_account_key_file) {
    builder.service_account_key_file(*spec.service_account_key_file);
  }
  builder.deserializer([](const spanner::DataChangeRecord& r,
                          Collector<PipelineRecord>& out) -> absl::Status {
    GCP_ASSIGN_OR_RETURN(std::vector<PipelineRecord> records, DataChangeRecordToPipelineRecords(r));
    for (auto& record : records) out.collect(std::move(record));
    return absl::OkStatus();
  });
  auto source = builder.build();
  if (!source.ok()) return source.status();
  return PipelineSource::of(*std::move(source), "spanner_change_stream");
}

}  // namespace gcpstream::pipeline
