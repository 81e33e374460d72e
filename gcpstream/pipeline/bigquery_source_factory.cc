#include "gcpstream/pipeline/bigquery_source_factory.h"

#include "gcpstream/bigquery/source/bigquery_source.h"

namespace gcpstream::pipeline {

PipelineRecord BigQueryReadRowToPipelineRecord(const bigquery::BigQueryReadRow& row) {
  PipelineRecord record;
  record.fields = row.to_json();
  return record;
}

absl::StatusOr<PipelineSource> MakeBigQueryPipelineSource(const BigQuerySourceSpec& spec) {
  auto builder = bigquery::BigQuerySource<PipelineRecord>::builder();
  if (spec.query.empty()) {
    builder.table(connector::BigQueryTableDestination::of(spec.project, spec.dataset, spec.table));
    builder.materialize_views(spec.materialize_views);
  } else {
    builder.query(spec.query).parent_project(spec.project);
  }
  if (!spec.query.empty() || spec.materialize_views) {
    if (!spec.query_location.empty()) builder.query_location(spec.query_location);
    if (!spec.query_result_dataset.empty()) {
      builder.query_result_dataset(spec.query_result_dataset);
    }
    if (spec.reuse_query_result_within.count() > 0) {
      builder.reuse_query_result_within(spec.reuse_query_result_within, spec.job_name);
    }
    if (spec.emulator_rest_endpoint) builder.emulator_rest_endpoint(*spec.emulator_rest_endpoint);
  }
  builder.selected_fields(spec.selected_fields)
      .row_restriction(spec.row_restriction)
      .max_stream_count(spec.max_stream_count)
      .preferred_min_stream_count(spec.preferred_min_stream_count)
      .max_records_per_fetch(spec.max_records_per_fetch)
      .retry_max_attempts(spec.retry_max_attempts);
  if (spec.parent_project) builder.parent_project(*spec.parent_project);
  if (spec.snapshot_time_us) builder.snapshot_time(absl::FromUnixMicros(*spec.snapshot_time_us));
  if (spec.emulator_endpoint) builder.emulator_endpoint(*spec.emulator_endpoint);
  if (spec.service_account_key_file) {
    builder.service_account_key_file(*spec.service_account_key_file);
  }
  builder.deserializer(
      [](const bigquery::BigQueryReadRow& row, Collector<PipelineRecord>& out) -> absl::Status {
        out.collect(BigQueryReadRowToPipelineRecord(row));
        return absl::OkStatus();
      });
  auto source = builder.build();
  if (!source.ok()) return source.status();
  return PipelineSource::of(*std::move(source), "bigquery");
}

}  // namespace gcpstream::pipeline
