// The `sink:` keys of a BigQuery sink.
#include <fmt/format.h>
#include <re2/re2.h>

#include "gcpstream/pipeline/internal/spec_sections.h"
#include "gcpstream/pipeline/record_template.h"

namespace gcpstream::pipeline::internal {
namespace {

// BigQuery's identifiers: project ids as Google Cloud writes them, dataset ids of letters,
// digits and underscores (1,024 at most), table ids of letters, digits, underscores, dashes and
// spaces (1,024 bytes at most; the other Unicode classes BigQuery allows are not accepted here).
absl::Status CheckId(const std::string& id, const char* what, const char* pattern) {
  if (id.size() > 1024 || !RE2::FullMatch(id, pattern)) {
    return absl::InvalidArgumentError(fmt::format("\"{}\" is not a valid BigQuery {}", id, what));
  }
  return absl::OkStatus();
}

void ParseColumns(YamlMap& parent, const std::string& key, int depth,
                  std::vector<bigquery::TableFieldSchema>& out) {
  YamlContext& ctx = parent.context();
  const YAML::Node list = parent.node(key);
  if (!list.IsDefined()) return;
  if (!list.IsSequence() || list.size() == 0) {
    ctx.fail(list.Mark(), parent.key_path(key), "expected a non-empty list of columns");
    return;
  }
  if (depth > 15) {
    ctx.fail(list.Mark(), parent.key_path(key), "RECORDs nest at most 15 levels");
    return;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    YamlMap c(ctx, list[i], fmt::format("{}[{}]", parent.key_path(key), i));
    bigquery::TableFieldSchema f;
    f.name = c.required_string("name");
    const std::string type = c.required_string("type");
    if (!type.empty()) {
      auto parsed = bigquery::ParseFieldType(type);
      if (parsed.ok()) {
        f.type = *parsed;
      } else {
        c.check("type", parsed.status());
      }
    }
    const std::string mode = c.choice("mode", "NULLABLE", {"NULLABLE", "REQUIRED", "REPEATED"});
    f.mode = mode == "REQUIRED"   ? bigquery::FieldMode::kRequired
             : mode == "REPEATED" ? bigquery::FieldMode::kRepeated
                                  : bigquery::FieldMode::kNullable;
    if (auto n = c.optional_integer("max_length", "unbounded", IntRange{1, 1LL << 40})) {
      f.max_length = *n;
    }
    f.description = c.string("description", "");
    ParseColumns(c, "fields", depth + 1, f.fields);
    c.finish();
    out.push_back(std::move(f));
  }
}

}  // namespace

void ParseBigQueryProject(YamlMap& m, std::string& project) {
  project = m.required_string("project");
  if (!project.empty()) {
    m.check("project", CheckId(project, "project id", R"([a-z][a-z0-9\-.:]*)"));
  }
}

void ParseBigQueryDataset(YamlMap& m, std::string& project, std::string& dataset) {
  ParseBigQueryProject(m, project);
  dataset = m.required_string("dataset");
  if (!dataset.empty()) m.check("dataset", CheckId(dataset, "dataset id", R"([A-Za-z0-9_]+)"));
}

BigQuerySinkSpec ParseBigQuerySink(YamlMap& m) {
  BigQuerySinkSpec spec;
  ParseBigQueryDataset(m, spec.project, spec.dataset);
  spec.table = m.required_string("table");
  if (spec.table.find('{') != std::string::npos) {
    // A template: each record's table, from its fields ("delays_{origin}").
    m.check("table", RecordTemplate::parse(spec.table).status());
  } else if (!spec.table.empty()) {
    m.check("table", bigquery::ValidateTableId(spec.table));
  }
  if (!m.has("schema")) {
    m.context().fail(m.mark(), m.key_path("schema"),
                     "required key is missing: the table's columns ([{name, type, mode}, ...]), "
                     "used to encode each record's fields and to create the table");
  }
  ParseColumns(m, "schema", 1, spec.schema.fields);
  if (!spec.schema.fields.empty()) {
    m.check("schema", bigquery::ValidateTableSchema(spec.schema));
  }
  const std::string method =
      m.choice("write_method", "STORAGE_API_AT_LEAST_ONCE",
               {"STORAGE_API_AT_LEAST_ONCE", "STORAGE_API_EXACTLY_ONCE", "FILE_LOADS"});
  spec.write_method = method == "STORAGE_API_EXACTLY_ONCE"
                          ? bigquery::WriteMethod::kStorageApiExactlyOnce
                      : method == "FILE_LOADS" ? bigquery::WriteMethod::kFileLoads
                                               : bigquery::WriteMethod::kStorageApiAtLeastOnce;
  if (m.has("file_loads") || spec.write_method == bigquery::WriteMethod::kFileLoads) {
    YamlMap f = m.map("file_loads");
    bigquery::FileLoadsOptions o;
    if (spec.write_method == bigquery::WriteMethod::kFileLoads) {
      o.staging_path = f.required_string("staging_path");
    } else {
      o.staging_path = f.string("staging_path", "");
      m.check("file_loads",
              absl::InvalidArgumentError("file_loads is read only with write_method: FILE_LOADS"));
    }
    auto disposition = bigquery::ParseWriteDisposition(f.choice(
        "write_disposition", "WRITE_APPEND", {"WRITE_APPEND", "WRITE_TRUNCATE", "WRITE_EMPTY"}));
    if (disposition.ok()) o.write_disposition = *disposition;
    o.min_checkpoint_interval =
        f.duration("min_checkpoint_interval", o.min_checkpoint_interval,
                   DurationRange{std::chrono::milliseconds(0), std::chrono::hours(24), true});
    o.max_staging_file_bytes = f.integer("max_staging_file_bytes", o.max_staging_file_bytes,
                                         IntRange{1LL << 20, 1LL << 40});
    o.load_job_poll_initial_backoff =
        f.duration("load_job_poll_initial_backoff", o.load_job_poll_initial_backoff, kShortDelay);
    o.load_job_poll_max_backoff =
        f.duration("load_job_poll_max_backoff", o.load_job_poll_max_backoff, kShortDelay);
    f.finish();
    if (!o.staging_path.empty()) m.check("file_loads", o.validate());
    if (spec.write_method == bigquery::WriteMethod::kFileLoads) spec.file_loads = o;
  }
  spec.create_if_needed = m.choice("create_disposition", "CREATE_IF_NEEDED",
                                   {"CREATE_IF_NEEDED", "CREATE_NEVER"}) == "CREATE_IF_NEEDED";
  {
    YamlMap t = m.map("table_create_options");
    auto& o = spec.table_create_options;
    if (t.has("time_partitioning")) {
      YamlMap p = t.map("time_partitioning");
      o.time_partitioning = {{"type", p.choice("type", "DAY", {"DAY", "HOUR", "MONTH", "YEAR"})}};
      if (auto field = p.optional_string("field")) o.time_partitioning["field"] = *field;
      p.finish();
    } else {
      t.node("time_partitioning");
    }
    o.clustering_fields = t.string_list("clustering_fields");
    o.description = t.string("description", "");
    t.finish();
  }
  if (!spec.schema.fields.empty()) {
    m.check("table_create_options", spec.table_create_options.validate(spec.schema));
  }
  {
    YamlMap u = m.map("schema_update_options");
    spec.schema_update_options.allow_new_fields = u.boolean("allow_new_fields", false);
    spec.schema_update_options.allow_field_relaxation = u.boolean("allow_field_relaxation", false);
    u.finish();
  }
  spec.emulator_endpoint = m.optional_string("emulator_endpoint");
  spec.emulator_rest_endpoint = m.optional_string("emulator_rest_endpoint");
  if (spec.emulator_rest_endpoint) {
    m.check("emulator_rest_endpoint", bigquery::ValidateRestEndpoint(*spec.emulator_rest_endpoint));
  }
  spec.service_account_key_file = m.optional_string("service_account_key_file");
  YamlMap w = m.map("writer_options");
  auto& o = spec.writer_options;
  o.max_append_request_bytes =
      w.integer("max_append_request_bytes", o.max_append_request_bytes, IntRange{1, 9'000'000});
  o.max_in_flight_rows = w.integer("max_in_flight_rows", o.max_in_flight_rows, kCount);
  o.max_in_flight_bytes = w.integer("max_in_flight_bytes", o.max_in_flight_bytes, kBytes);
  o.max_inflight_requests = static_cast<int>(
      w.integer("max_inflight_requests", o.max_inflight_requests, IntRange{1, 100000}));
  o.retry_initial_delay = w.duration("retry_initial_delay", o.retry_initial_delay, kShortDelay);
  o.retry_max_delay = w.duration("retry_max_delay", o.retry_max_delay, kShortDelay);
  o.retry_max_attempts =
      static_cast<int>(w.integer("retry_max_attempts", o.retry_max_attempts, IntRange{1, 1000}));
  o.max_retry_duration = w.duration("max_retry_duration", o.max_retry_duration, kTimeout);
  o.append_answer_timeout = w.duration("append_answer_timeout", o.append_answer_timeout, kTimeout);
  o.flush_interval =
      w.duration("flush_interval", o.flush_interval,
                 DurationRange{std::chrono::milliseconds(0), std::chrono::hours(24)});
  ParseRecovery(w, o.recovery);
  o.per_destination_metrics = w.boolean("per_destination_metrics", o.per_destination_metrics);
  o.max_consecutive_rejections = static_cast<int>(w.integer(
      "max_consecutive_rejections", o.max_consecutive_rejections, IntRange::int32_from(-1)));
  o.stall_warning_interval =
      w.duration("stall_warning_interval", o.stall_warning_interval, kTimeout);
  o.shutdown_timeout = w.duration("shutdown_timeout", o.shutdown_timeout, kTimeout);
  w.finish();
  m.check("writer_options", o.validate());
  return spec;
}

}  // namespace gcpstream::pipeline::internal
