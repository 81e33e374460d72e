// The `source:` keys of a BigQuery source.
#include <fmt/format.h>

#include "absl/time/time.h"
#include "gcpstream/bigquery/admin/table_admin_factory.h"
#include "gcpstream/bigquery/sink/bigquery_writer_options.h"
#include "gcpstream/bigquery/source/bigquery_read_options.h"
#include "gcpstream/pipeline/internal/spec_sections.h"

namespace gcpstream::pipeline::internal {

namespace {

void ParseQueryJobKeys(YamlMap& m, BigQuerySourceSpec& spec);

// `query:` instead of `dataset:` and `table:`: the job runs in `project`.
void ParseQueryRoute(YamlMap& m, BigQuerySourceSpec& spec) {
  spec.query = m.required_string("query");
  ParseBigQueryProject(m, spec.project);
  for (const char* key : {"dataset", "table"}) {
    if (m.has(key)) {
      m.check(key, absl::InvalidArgumentError(
                       "a query source reads what its query names: drop `dataset` and `table`"));
    }
  }
  ParseQueryJobKeys(m, spec);
}

// The keys of the query job a query source, or a view under materialize_views, runs.
void ParseQueryJobKeys(YamlMap& m, BigQuerySourceSpec& spec) {
  spec.query_location = m.string("query_location", "");
  spec.query_result_dataset = m.string("query_result_dataset", "");
  spec.reuse_query_result_within =
      m.duration("reuse_query_result_within", std::chrono::milliseconds(0),
                 DurationRange{std::chrono::milliseconds(1), std::chrono::hours(24), true});
  spec.emulator_rest_endpoint = m.optional_string("emulator_rest_endpoint");
  if (spec.emulator_rest_endpoint) {
    m.check("emulator_rest_endpoint", bigquery::ValidateRestEndpoint(*spec.emulator_rest_endpoint));
  }
}

// A table read without materialize_views runs no job: its keys are refused by name, rather than
// reported as unknown.
void RefuseQueryJobKeys(YamlMap& m) {
  for (const char* key : {"query_location", "query_result_dataset", "reuse_query_result_within",
                          "emulator_rest_endpoint"}) {
    if (!m.has(key)) continue;
    m.node(key);  // known here, so not also reported as unknown
    m.check(key, absl::InvalidArgumentError(
                     "configures the query job of a `query:` source or of a view read with "
                     "`materialize_views: true`; a table is read directly, without a job"));
  }
}

}  // namespace

BigQuerySourceSpec ParseBigQuerySource(YamlMap& m) {
  BigQuerySourceSpec spec;
  YamlContext& ctx = m.context();
  if (m.has("query")) {
    ParseQueryRoute(m, spec);
  } else {
    ParseBigQueryDataset(m, spec.project, spec.dataset);
    spec.table = m.required_string("table");
    if (!spec.table.empty()) m.check("table", bigquery::ValidateTableId(spec.table));
    spec.materialize_views = m.boolean("materialize_views", false);
    if (spec.materialize_views) {
      ParseQueryJobKeys(m, spec);
    } else {
      RefuseQueryJobKeys(m);
    }
  }
  if (spec.query.empty()) {
    spec.parent_project = m.optional_string("parent_project");
  } else if (m.has("parent_project")) {
    m.check("parent_project",
            absl::InvalidArgumentError("a query source runs its job, and is billed, in `project`: "
                                       "drop `parent_project`"));
  }
  spec.selected_fields = m.string_list("selected_fields");
  spec.row_restriction = m.string("row_restriction", "");
  if (auto ts = m.optional_string("snapshot_time")) {
    absl::Time t;
    std::string err;
    if (absl::ParseTime(absl::RFC3339_full, *ts, &t, &err)) {
      spec.snapshot_time_us = absl::ToUnixMicros(t);
    } else {
      ctx.fail(m.mark(), m.key_path("snapshot_time"),
               fmt::format("'{}' is not an RFC 3339 time (2026-08-09T10:00:00Z)", *ts));
    }
  }
  constexpr IntRange kStreams{0, 100000};
  spec.max_stream_count = static_cast<int>(m.integer("max_stream_count", 0, kStreams));
  spec.preferred_min_stream_count =
      static_cast<int>(m.integer("preferred_min_stream_count", 0, kStreams));
  spec.max_records_per_fetch = static_cast<int>(
      m.integer("max_records_per_fetch", spec.max_records_per_fetch, IntRange{1, 1000000}));
  spec.retry_max_attempts = static_cast<int>(
      m.integer("retry_max_attempts", spec.retry_max_attempts, IntRange{1, 100000}));
  spec.emulator_endpoint = m.optional_string("emulator_endpoint");
  if (spec.emulator_rest_endpoint && !spec.emulator_endpoint) {
    m.check("emulator_rest_endpoint",
            absl::InvalidArgumentError("goes with emulator_endpoint: the query would go to the "
                                       "emulator and the reads to BigQuery"));
  }
  spec.service_account_key_file = m.optional_string("service_account_key_file");
  // What the builder refuses, reported at the key instead of when the job starts.
  if (spec.max_stream_count > 0 && spec.preferred_min_stream_count > spec.max_stream_count) {
    m.check("preferred_min_stream_count",
            absl::InvalidArgumentError(
                fmt::format("{} is above max_stream_count ({}); BigQuery refuses that session",
                            spec.preferred_min_stream_count, spec.max_stream_count)));
  }
  if (!spec.selected_fields.empty()) {
    bigquery::BigQueryReadOptions options;
    options.table = "projects/p/datasets/d/tables/t";
    options.selected_fields = spec.selected_fields;
    m.check("selected_fields", options.validate());
  }
  if (!spec.query.empty() || spec.materialize_views) {
    // The builder's query-job checks, each at the key it is about (one option set at a time).
    auto with = [&](auto set) {
      bigquery::BigQueryReadOptions options;
      if (spec.materialize_views) {
        options.table = "projects/p/datasets/d/tables/t";
        options.materialize_views = true;
      } else {
        options.query = spec.query;
        options.parent_project = spec.project;
      }
      options.job_name = "pipeline";  // the pipeline's `name:`, never empty
      set(options);
      return options.validate();
    };
    if (!spec.query.empty()) m.check("query", with([](auto&) {}));
    m.check("query_location", with([&](auto& o) { o.query_location = spec.query_location; }));
    m.check("query_result_dataset",
            with([&](auto& o) { o.query_result_dataset = spec.query_result_dataset; }));
    m.check("reuse_query_result_within", with([&](auto& o) {
              o.query_location = spec.query_location.empty() ? "" : "US";
              o.reuse_query_result_within = spec.reuse_query_result_within;
            }));
    if (spec.snapshot_time_us) {
      m.check("snapshot_time", with([&](auto& o) {
                o.snapshot_time = absl::FromUnixMicros(*spec.snapshot_time_us);
              }));
    }
  }
  return spec;
}

}  // namespace gcpstream::pipeline::internal
