#include "gcpstream/bigquery/sink/bigquery_writer_options.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <set>

#include "absl/strings/ascii.h"

namespace gcpstream::bigquery {
namespace {

// The Storage Write API's request bound (10 MB) less room for the request's own fields.
constexpr std::int64_t kMaxAppendRequestBytes = 9 * 1000 * 1000;

absl::Status Invalid(const char* option, const std::string& rule) {
  return absl::InvalidArgumentError(fmt::format("BigQuery sink option {}: {}", option, rule));
}

}  // namespace

absl::Status BigQueryWriterOptions::validate() const {
  if (max_append_request_bytes < 1 || max_append_request_bytes > kMaxAppendRequestBytes) {
    return Invalid("max_append_request_bytes",
                   fmt::format("must be 1 .. {} (an AppendRows request carries at most 10 MB)",
                               kMaxAppendRequestBytes));
  }
  if (retry_initial_delay.count() < 0 || retry_max_delay.count() < 0 ||
      max_retry_duration.count() < 0) {
    return Invalid("retry_*", "delays must not be negative");
  }
  if (append_answer_timeout.count() <= 0) {
    return Invalid("append_answer_timeout", "must be positive");
  }
  if (retry_delay_multiplier < 1.0) return Invalid("retry_delay_multiplier", "must be >= 1");
  if (retry_max_attempts < 1) return Invalid("retry_max_attempts", "must be >= 1");
  if (absl::Status s = recovery.validate(); !s.ok()) return s;
  if (max_inflight_requests < 1) return Invalid("max_inflight_requests", "must be >= 1");
  if (max_inflight_bytes < 1) return Invalid("max_inflight_bytes", "must be >= 1");
  if (max_in_flight_rows < 1) return Invalid("max_in_flight_rows", "must be >= 1");
  if (flush_interval.count() < 0) return Invalid("flush_interval", "must be >= 0 (0: off)");
  if (max_in_flight_bytes < 1) return Invalid("max_in_flight_bytes", "must be >= 1");
  if (destination_idle_timeout.count() <= 0) {
    return Invalid("destination_idle_timeout", "must be positive");
  }
  if (shutdown_timeout.count() <= 0) return Invalid("shutdown_timeout", "must be positive");
  if (max_consecutive_rejections < -1) {
    return Invalid("max_consecutive_rejections", "must be >= 0, or -1 to disable");
  }
  return absl::OkStatus();
}

nlohmann::json TableCreateOptions::resource(const TableSchema& schema) const {
  nlohmann::json out = {{"schema", {{"fields", TableSchemaToJson(schema)}}}};
  if (!time_partitioning.is_null()) out["timePartitioning"] = time_partitioning;
  if (!clustering_fields.empty()) out["clustering"] = {{"fields", clustering_fields}};
  if (!description.empty()) out["description"] = description;
  return out;
}

absl::Status TableCreateOptions::validate(const TableSchema& schema) const {
  auto column = [&](const std::string& name) -> const TableFieldSchema* {
    for (const auto& f : schema.fields) {
      if (absl::AsciiStrToLower(f.name) == absl::AsciiStrToLower(name)) return &f;
    }
    return nullptr;
  };
  if (clustering_fields.size() > 4) {
    return Invalid("table_create_options.clustering_fields", "BigQuery clusters by at most 4");
  }
  std::set<std::string> seen;
  for (const auto& c : clustering_fields) {
    const TableFieldSchema* f = column(c);
    if (f == nullptr || f->type == FieldType::kRecord || f->mode == FieldMode::kRepeated) {
      return Invalid(
          "table_create_options.clustering_fields",
          fmt::format("\"{}\" is not a top-level, non-repeated column of the schema", c));
    }
    if (!seen.insert(absl::AsciiStrToLower(c)).second) {
      return Invalid("table_create_options.clustering_fields",
                     fmt::format("\"{}\" appears twice", c));
    }
  }
  if (!time_partitioning.is_null()) {
    if (!time_partitioning.is_object()) {
      return Invalid("table_create_options.time_partitioning", "expected an object");
    }
    const auto type = time_partitioning.value("type", std::string("DAY"));
    if (type != "DAY" && type != "HOUR" && type != "MONTH" && type != "YEAR") {
      return Invalid("table_create_options.time_partitioning.type",
                     "must be DAY, HOUR, MONTH or YEAR");
    }
    if (time_partitioning.contains("field")) {
      const auto& name = time_partitioning["field"];
      const TableFieldSchema* f = name.is_string() ? column(name.get<std::string>()) : nullptr;
      if (f == nullptr || f->mode == FieldMode::kRepeated ||
          (f->type != FieldType::kDate && f->type != FieldType::kTimestamp &&
           f->type != FieldType::kDatetime)) {
        return Invalid("table_create_options.time_partitioning.field",
                       "must name a top-level DATE, TIMESTAMP or DATETIME column of the schema");
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateTableId(const std::string& id) {
  static const RE2 kId(R"([A-Za-z0-9_\- ]+)");
  if (id.size() > 1024 || !RE2::FullMatch(id, kId)) {
    return absl::InvalidArgumentError(fmt::format("\"{}\" is not a valid BigQuery table id", id));
  }
  return absl::OkStatus();
}

}  // namespace gcpstream::bigquery
