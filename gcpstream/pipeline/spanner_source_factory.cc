#include "gcpstream/pipeline/spanner_source_factory.h"

#include <fmt/format.h>

#include "gcpstream/spanner/source/spanner_source.h"

namespace gcpstream::pipeline {
namespace {

namespace sp = google::spanner::v1;
using nlohmann::json;

absl::StatusOr<json> ToJson(const spanner::Value& value) {
  if (value.is_null()) return json(nullptr);
  const auto& wire = value.proto();
  switch (value.type().code()) {
    case sp::BOOL:
      return json(wire.bool_value());
    case sp::INT64: {
      GCP_ASSIGN_OR_RETURN(std::int64_t v, value.as_int64());
      return json(v);
    }
    case sp::FLOAT64:
    case sp::FLOAT32:
      if (wire.has_string_value()) return json(wire.string_value());  // NaN, ±Infinity
      return json(wire.number_value());
    case sp::JSON: {
      json doc = json::parse(wire.string_value(), nullptr, /*allow_exceptions=*/false);
      if (doc.is_discarded()) return absl::InvalidArgumentError("a JSON value that does not parse");
      return doc;
    }
    case sp::ARRAY: {
      GCP_ASSIGN_OR_RETURN(std::vector<spanner::Value> elements, value.as_array());
      json out = json::array();
      for (const auto& e : elements) {
        GCP_ASSIGN_OR_RETURN(json j, ToJson(e));
        out.push_back(std::move(j));
      }
      return out;
    }
    case sp::STRUCT: {
      GCP_ASSIGN_OR_RETURN(auto fields, value.as_struct());
      json out = json::object();
      for (std::size_t i = 0; i < fields.size(); ++i) {
        std::string name = fields[i].first.empty() ? fmt::format("_{}", i) : fields[i].first;
        GCP_ASSIGN_OR_RETURN(json j, ToJson(fields[i].second));
        out.emplace(std::move(name), std::move(j));
      }
      return out;
    }
    default:
      // STRING, NUMERIC, DATE, TIMESTAMP, BYTES (base64): the text Spanner sent.
      return json(wire.string_value());
  }
}

}  // namespace

absl::StatusOr<json> SpannerRowToJson(const spanner::Row& row) {
  json fields = json::object();
  for (std::size_t i = 0; i < row.size(); ++i) {
    GCP_ASSIGN_OR_RETURN(spanner::Value value, row.get(i));  // the error names the column
    std::string name = row.name(i).empty() ? fmt::format("_{}", i) : row.name(i);
    auto j = ToJson(value);
    if (!j.ok()) {
      return absl::Status(j.status().code(),
                          fmt::format("column {}: {}", name, j.status().message()));
    }
    fields.emplace(std::move(name), *std::move(j));
  }
  return fields;
}

absl::StatusOr<PipelineSource> MakeSpannerPipelineSource(const SpannerSourceSpec& spec) {
  auto builder = spanner::SpannerSource<PipelineRecord>::builder();
  builder.database(connector::DatabaseDestination::of(spec.project, spec.instance, spec.database));
  if (spec.query) {
    builder.read_operation(spanner::SpannerReadOperation::query(*spec.query));
  } else if (spec.index) {
    builder.read_operation(spanner::SpannerReadOperation::read_using_index(
        spec.table.value_or(""), *spec.index, spec.columns));
  } else {
    builder.read_operation(
        spanner::SpannerReadOperation::read(spec.table.value_or(""), spec.columns));
  }
  builder.options(spec.options);
  if (spec.emulator_endpoint) builder.emulator_endpoint(*spec.emulator_endpoint);
  if (spec.service_account_key_file) {
    builder.service_account_key_file(*spec.service_account_key_file);
  }
  builder.deserializer([](const spanner::Row& row, Collector<PipelineRecord>& out) -> absl::Status {
    GCP_ASSIGN_OR_RETURN(json fields, SpannerRowToJson(row));
    PipelineRecord record;
    record.fields = std::move(fields);
    out.collect(std::move(record));
    return absl::OkStatus();
  });
  auto source = builder.build();
  if (!source.ok()) return source.status();
  return PipelineSource::of(*std::move(source), "spanner");
}

}  // namespace gcpstream::pipeline
