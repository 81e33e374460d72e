#include "gcpstream/pipeline/bigtable_change_stream_source_factory.h"

#include "absl/strings/escaping.h"
#include "gcpstream/bigtable/changestream/bigtable_change_stream_source.h"
#include "gcpstream/pipeline/record_json.h"

namespace gcpstream::pipeline {

namespace {

using nlohmann::json;
using namespace bigtable;

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*SZ", t, absl::UTCTimeZone());
}

void PutValue(json& out, const ChangeStreamValue& v) {
  switch (v.get_type()) {
    case ChangeStreamValue::Type::kInt64:
      out["input_type"] = "INT64";
      out["input"] = v.int_value;
      break;
    case ChangeStreamValue::Type::kRawTimestampMicros:
      out["input_type"] = "RAW_TIMESTAMP_MICROS";
      out["input"] = v.int_value;
      break;
    case ChangeStreamValue::Type::kRawValue:
      out["input_type"] = "RAW";
      PutBytesField(out, "input", v.bytes);
      break;
    case ChangeStreamValue::Type::kBytes:
      out["input_type"] = "BYTES";
      PutBytesField(out, "input", v.bytes);
      break;
    case ChangeStreamValue::Type::kOther:
      out["input_type"] = "OTHER";
      out["input_base64"] = absl::Base64Escape(v.bytes);
      break;
  }
}

json EntryJson(const ChangeStreamEntry& entry) {
  json e = json::object();
  e["family"] = FamilyOf(entry);
  if (const std::string* q = QualifierOf(entry)) PutBytesField(e, "qualifier", *q);
  std::visit(
      [&](const auto& x) {
        using E = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<E, SetCellEntry>) {
          e["kind"] = "SET_CELL";
          e["timestamp_micros"] = x.timestamp_micros;
          PutBytesField(e, "value", x.value);
        } else if constexpr (std::is_same_v<E, DeleteCellsEntry>) {
          e["kind"] = "DELETE_CELLS";
          e["start_micros"] = x.start_micros;
          e["end_micros"] = x.end_micros;
        } else if constexpr (std::is_same_v<E, DeleteFamilyEntry>) {
          e["kind"] = "DELETE_FAMILY";
        } else if constexpr (std::is_same_v<E, AddToCellEntry>) {
          e["kind"] = "ADD_TO_CELL";
          e["timestamp_micros"] = x.timestamp_micros;
          PutValue(e, x.input);
        } else {
          e["kind"] = "MERGE_TO_CELL";
          e["timestamp_micros"] = x.timestamp_micros;
          PutValue(e, x.input);
        }
      },
      entry);
  return e;
}

}  // namespace

PipelineRecord ChangeStreamMutationToPipelineRecord(const BigtableChangeStreamMutation& m) {
  PipelineRecord record;
  json& f = record.fields;
  PutBytesField(f, "_row_key", m.row_key());
  f["_mod_type"] = m.type() == ChangeStreamMutationType::kUser ? "USER" : "GARBAGE_COLLECTION";
  f["_commit_timestamp"] = Rfc3339(m.commit_timestamp());
  f["_tiebreaker"] = m.tiebreaker();
  f["_source_cluster"] = m.source_cluster();
  f["_low_watermark"] = Rfc3339(m.estimated_low_watermark());
  json entries = json::array();
  for (const auto& e : m.entries()) entries.push_back(EntryJson(e));
  f["_entries"] = std::move(entries);
  record.event_time_ms = absl::ToUnixMillis(m.commit_timestamp());
  return record;
}

absl::StatusOr<PipelineSource> MakeBigtableChangeStreamPipelineSource(
    const BigtableChangeStreamSourceSpec& spec) {
  auto builder = BigtableChangeStreamSource<PipelineRecord>::builder();
  builder.table(connector::TableDestination::of(spec.project, spec.instance, spec.table))
      .app_profile_id(spec.app_profile_id)
      .options(spec.options);
  if (spec.emulator_endpoint) builder.emulator_endpoint(*spec.emulator_endpoint);
  if (spec.service_account_key_file) {
    builder.service_account_key_file(*spec.service_account_key_file);
  }
  builder.deserializer(
      [](const BigtableChangeStreamMutation& m, Collector<PipelineRecord>& out) -> absl::Status {
        out.collect(ChangeStreamMutationToPipelineRecord(m));
        return absl::OkStatus();
      });
  auto source = builder.build();
  if (!source.ok()) return source.status();
  return PipelineSource::of(*std::move(source), "bigtable_change_stream");
}

}  // namespace gcpstream::pipeline
