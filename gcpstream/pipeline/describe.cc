#include "gcpstream/pipeline/describe.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "absl/time/time.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigtable/client/row_key_range.h"
#include "gcpstream/connector/lineage.h"
#include "gcpstream/pipeline/duration_text.h"
#include "gcpstream/pipeline/file_source.h"
#include "gcpstream/pipeline/option_location.h"
#include "gcpstream/pipeline/pipeline_job.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"

namespace gcpstream::pipeline {
namespace {

const char* OpName(FieldComparison::Op op) {
  static const char* kNames[] = {"eq", "ne", "lt", "le", "gt", "ge", "exists", "not_exists"};
  return kNames[static_cast<int>(op)];
}

std::string Comparisons(const std::vector<FieldComparison>& list) {
  std::string out;
  for (const auto& c : list) {
    if (!out.empty()) out += " and ";
    out += fmt::format("{} {}", c.field, OpName(c.op));
    if (c.op != FieldComparison::Op::kExists && c.op != FieldComparison::Op::kNotExists) {
      out += " " + c.value.dump();
    }
  }
  return out;
}

std::string SourceLine(const SourceSpec& source) {
  if (const auto* f = std::get_if<FileSourceSpec>(&source)) {
    const char* format = f->format == FileSourceSpec::Format::kJsonLines   ? "JSON lines"
                         : f->format == FileSourceSpec::Format::kJsonArray ? "JSON array"
                                                                           : "JSON (auto)";
    return fmt::format("file {} ({}, bounded, splits of ~{} bytes, checkpointed offsets)", f->path,
                       format, f->split_bytes);
  }
  if (const auto* s = std::get_if<SpannerSourceSpec>(&source)) {
    const std::string what =
        s->query ? fmt::format("query \"{}\"", *s->query)
                 : fmt::format("table {}{} ({})", s->table.value_or(""),
                               s->index ? " through index " + *s->index : std::string(),
                               fmt::join(s->columns, ", "));
    return fmt::format(
        "spanner {} {} at {} (bounded, one partition per split, a restore re-reads unfinished "
        "partitions at the same snapshot{})",
        connector::DatabaseDestination::of(s->project, s->instance, s->database).resource_name(),
        what, s->options.timestamp_bound.to_string(),
        s->emulator_endpoint ? ", emulator " + *s->emulator_endpoint : "");
  }
  if (const auto* c = std::get_if<SpannerChangeStreamSourceSpec>(&source)) {
    return fmt::format(
        "spanner change stream {} of {} from {} (unbounded, partitions as splits, at most {} "
        "queries per subtask, a restore resumes each partition at its checkpointed timestamp, "
        "inclusive{})",
        c->change_stream,
        connector::DatabaseDestination::of(c->project, c->instance, c->database).resource_name(),
        c->options.start_position.describe(), c->options.max_concurrent_queries_per_subtask,
        c->emulator_endpoint ? ", emulator " + *c->emulator_endpoint : "");
  }
  if (const auto* q = std::get_if<BigQuerySourceSpec>(&source)) {
    std::vector<std::string> what;
    if (!q->selected_fields.empty()) {
      what.push_back(fmt::format("columns {}", fmt::join(q->selected_fields, ", ")));
    }
    if (!q->row_restriction.empty()) what.push_back("where " + q->row_restriction);
    if (q->snapshot_time_us) {
      what.push_back("as of " + absl::FormatTime(absl::RFC3339_full,
                                                 absl::FromUnixMicros(*q->snapshot_time_us),
                                                 absl::UTCTimeZone()));
    }
    const std::string read =
        q->query.empty()
            ? connector::BigQueryTableDestination::of(q->project, q->dataset, q->table)
                      .resource_name() +
                  (q->materialize_views ? " (a view is read through a query job selecting from it)"
                                        : "")
            : fmt::format(
                  "query \"{}\" (run once as a query job in project {}{}{}; its result "
                  "table read)",
                  q->query, q->project, q->query_location.empty() ? "" : " at " + q->query_location,
                  q->reuse_query_result_within.count() > 0
                      ? ", the same job reused by attempts within " +
                            FormatDuration(q->reuse_query_result_within)
                      : "");
    return fmt::format(
        "bigquery {} {}(bounded, one read session of Avro streams as splits, a restore resumes "
        "each stream at its checkpointed offset{})",
        read, what.empty() ? std::string() : fmt::format("{} ", fmt::join(what, ", ")),
        q->emulator_endpoint ? ", emulator " + *q->emulator_endpoint : "");
  }
  if (const auto* b = std::get_if<BigtableSourceSpec>(&source)) {
    std::vector<std::string> what;
    for (const auto& [start, end] : b->row_ranges) {
      what.push_back(bigtable::FormatRowRange(bigtable::RowKeyRange{start, end}));
    }
    for (const auto& p : b->prefixes) what.push_back("prefix " + p);
    for (const auto& k : b->row_keys) what.push_back("key " + k);
    return fmt::format(
        "bigtable {} {}{} (bounded, splits from SampleRowKeys, a restore resumes each split past "
        "its last emitted row{})",
        connector::TableDestination::of(b->project, b->instance, b->table).resource_name(),
        what.empty() ? std::string("whole table") : fmt::format("{}", fmt::join(what, ", ")),
        b->family ? ", family " + *b->family : std::string(),
        b->emulator_endpoint ? ", emulator " + *b->emulator_endpoint : "");
  }
  if (const auto* c = std::get_if<BigtableChangeStreamSourceSpec>(&source)) {
    return fmt::format(
        "bigtable change stream of {} from {}{} (partitions as splits, at most {} streams per "
        "subtask, a restore resumes each partition at its checkpointed continuation token{})",
        connector::TableDestination::of(c->project, c->instance, c->table).resource_name(),
        c->options.start_position.describe(),
        c->options.end_time ? " to " +
                                  absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*SZ", *c->options.end_time,
                                                   absl::UTCTimeZone()) +
                                  ", bounded"
                            : ", unbounded",
        c->options.max_concurrent_streams_per_subtask,
        c->emulator_endpoint ? ", endpoint " + *c->emulator_endpoint : "");
  }
  const auto& p = std::get<PubSubSourceSpec>(source);
  std::string subs;
  for (const auto& s : p.subscriptions) {
    if (!subs.empty()) subs += ", ";
    subs += connector::SubscriptionDestination::of(s.project, s.subscription).resource_name();
    if (s.create) subs += fmt::format(" (created on topic {} if missing)", s.create->topic);
  }
  return fmt::format("pubsub {} (unbounded, acknowledged when a checkpoint completes{})", subs,
                     p.emulator_endpoint ? ", emulator " + *p.emulator_endpoint : "");
}

std::string SinkLine(const PipelineSpec& spec) {
  if (const auto* b = std::get_if<BigtableSinkSpec>(&spec.sink)) {
    const auto& m = *spec.transform.to_bigtable;
    std::string cols;
    for (const auto& [q, t] : m.columns) cols += fmt::format(" {}:{}={}", m.family, q, t);
    for (const auto& [q, t] : m.add_to_cell) cols += fmt::format(" {}:{}+={}", m.family, q, t);
    for (const auto& [q, t] : m.increment)
      cols += fmt::format(" {}:{} incremented by {}", m.family, q, t);
    for (const auto& [q, t] : m.append) cols += fmt::format(" {}:{} appended {}", m.family, q, t);
    if (m.when) {
      using Kind = BigtableMappingSpec::Predicate::Kind;
      cols += m.when->kind == Kind::kRowExists ? std::string(" when the row exists")
              : m.when->kind == Kind::kCellExists
                  ? fmt::format(" when {}:{} exists", m.family, m.when->qualifier)
                  : fmt::format(" when the newest {}:{} equals {}", m.family, m.when->qualifier,
                                m.when->value);
      for (const auto& [q, t] : m.otherwise)
        cols += fmt::format(", otherwise {}:{}={}", m.family, q, t);
    }
    if (b->mode != BigtableSinkSpec::Mode::kMutateRows) {
      cols += b->mode == BigtableSinkSpec::Mode::kConditional
                  ? " (one CheckAndMutateRow per record)"
                  : " (one ReadModifyWriteRow per record)";
    }
    return fmt::format(
        "bigtable {} row key {}, cells{}, timestamp {}{}{}{}",
        connector::TableDestination::of(b->project, b->instance, b->table).resource_name(),
        m.row_key, cols,
        m.timestamp ? fmt::format("from field {}{}", m.timestamp->field,
                                  m.timestamp->format ? " as \"" + *m.timestamp->format + "\""
                                                      : std::string(" (number)"))
                    : std::string("the writer's clock"),
        b->create_if_needed ? ", table created if missing" : "",
        b->exactly_once
            ? fmt::format(", exactly once (staged until each checkpoint completes, markers in "
                          "family {}, app profile {})",
                          b->staged_options.marker_family, b->app_profile_id)
            : std::string(", at least once"),
        b->emulator_endpoint ? ", emulator " + *b->emulator_endpoint : "");
  }
  if (const auto* c = std::get_if<CloudTasksSinkSpec>(&spec.sink)) {
    const auto& m = *spec.transform.to_cloud_tasks;
    std::string headers;
    for (const auto& [k, t] : m.headers) headers += fmt::format(" {}={}", k, t);
    return fmt::format(
        "cloud_tasks {} {} {} {}, body {}{}{}{}",
        connector::QueueDestination::of(c->project, c->location, c->queue).resource_name(),
        m.relative_uri ? "App Engine" : "HTTP", m.method,
        m.relative_uri ? *m.relative_uri : m.url.value_or(""),
        m.body_field ? "field " + *m.body_field : std::string("= the record as JSON"),
        headers.empty() ? "" : ", headers" + headers,
        m.task_id ? ", named by SHA-256 of " + *m.task_id + " (deduplicated)"
                  : std::string(", unnamed (a replay creates another task)"),
        c->emulator_endpoint ? ", emulator " + *c->emulator_endpoint : "");
  }
  if (const auto* q = std::get_if<BigQuerySinkSpec>(&spec.sink)) {
    std::string cols;
    for (const auto& f : q->schema.fields) {
      cols += fmt::format(" {} {} {}", f.name, bigquery::FieldTypeName(f.type),
                          bigquery::FieldModeName(f.mode));
    }
    std::string method = "default stream, at least once";
    if (q->write_method == bigquery::WriteMethod::kStorageApiExactlyOnce) {
      method = "BUFFERED streams flushed when a checkpoint completes, exactly once";
    } else if (q->file_loads) {
      method = fmt::format(
          "Avro files staged under {} and loaded by {} load jobs when a checkpoint "
          "completes, exactly once",
          q->file_loads->staging_path,
          bigquery::WriteDispositionName(q->file_loads->write_disposition));
    }
    return fmt::format(
        "bigquery {} ({}), the record's fields as columns{} (other fields not written), {}{}",
        connector::BigQueryTableDestination::of(q->project, q->dataset, q->table).resource_name(),
        method, cols, q->create_if_needed ? "table created if missing" : "table must exist",
        q->emulator_endpoint ? ", emulator " + *q->emulator_endpoint : "");
  }
  if (const auto* s = std::get_if<SpannerSinkSpec>(&spec.sink)) {
    const auto& m = *spec.transform.to_spanner;
    std::string cols;
    for (const auto& c : m.columns) cols += fmt::format(" {}={} ({})", c.name, c.value, c.type);
    return fmt::format(
        "spanner {} {} into {}, columns{}, constraint violations {}{}",
        connector::DatabaseDestination::of(s->project, s->instance, s->database).resource_name(),
        m.operation, m.table, cols,
        s->route_constraint_violations ? "routed to the failure handler" : "fail the job",
        s->emulator_endpoint ? ", emulator " + *s->emulator_endpoint : "");
  }
  const auto& p = std::get<PubSubSinkSpec>(spec.sink);
  const PubSubMappingSpec m = spec.transform.to_pubsub.value_or(PubSubMappingSpec{});
  std::string attrs;
  for (const auto& [k, t] : m.attributes) attrs += fmt::format(" {}={}", k, t);
  return fmt::format("pubsub {} data {}, attributes{}{}{}{}{}",
                     connector::TopicDestination::of(p.project, p.topic).resource_name(),
                     m.data_field ? "field " + *m.data_field : std::string("= the record as JSON"),
                     m.include_record_attributes ? " (the record's own)" : "", attrs,
                     m.ordering_key ? ", ordering key " + *m.ordering_key : "",
                     p.create_if_needed ? ", topic created if missing" : "",
                     p.emulator_endpoint ? ", emulator " + *p.emulator_endpoint : "");
}

}  // namespace

std::vector<std::pair<std::string, LineageVertex>> PipelineLineage(const PipelineSpec& spec) {
  std::vector<std::pair<std::string, LineageVertex>> out;
  if (const auto* f = std::get_if<FileSourceSpec>(&spec.source)) {
    out.emplace_back("source", FileSource(*f).lineage_vertex());
  } else if (const auto* s = std::get_if<SpannerSourceSpec>(&spec.source)) {
    LineageVertex v;
    v.role = LineageVertex::Role::kSource;
    v.connector = "spanner";
    v.bounded = true;
    const auto db = connector::DatabaseDestination::of(s->project, s->instance, s->database);
    v.datasets.push_back(s->table ? connector::SpannerDataset(db, *s->table)
                                  : connector::SpannerDatabaseDataset(db));
    out.emplace_back("source", std::move(v));
  } else if (const auto* q = std::get_if<BigQuerySourceSpec>(&spec.source)) {
    LineageVertex v;
    v.role = LineageVertex::Role::kSource;
    v.connector = "bigquery";
    v.bounded = true;
    if (q->query.empty()) {  // a query's result table is known once its job ran
      v.datasets.push_back(connector::BigQueryDataset(
          connector::BigQueryTableDestination::of(q->project, q->dataset, q->table)));
    }
    out.emplace_back("source", std::move(v));
  } else if (const auto* b = std::get_if<BigtableSourceSpec>(&spec.source)) {
    LineageVertex v;
    v.role = LineageVertex::Role::kSource;
    v.connector = "bigtable";
    v.bounded = true;
    v.datasets.push_back(connector::BigtableDataset(
        connector::TableDestination::of(b->project, b->instance, b->table)));
    out.emplace_back("source", std::move(v));
  } else if (const auto* c = std::get_if<BigtableChangeStreamSourceSpec>(&spec.source)) {
    LineageVertex v;
    v.role = LineageVertex::Role::kSource;
    v.connector = "bigtable";
    v.bounded = c->options.end_time.has_value();
    v.datasets.push_back(connector::BigtableDataset(
        connector::TableDestination::of(c->project, c->instance, c->table)));
    out.emplace_back("source", std::move(v));
  } else if (const auto* c = std::get_if<SpannerChangeStreamSourceSpec>(&spec.source)) {
    LineageVertex v;
    v.role = LineageVertex::Role::kSource;
    v.connector = "spanner";
    v.bounded = false;
    v.datasets.push_back(connector::SpannerChangeStreamDataset(
        connector::DatabaseDestination::of(c->project, c->instance, c->database),
        c->change_stream));
    out.emplace_back("source", std::move(v));
  } else {
    LineageVertex v;
    v.role = LineageVertex::Role::kSource;
    v.connector = "pubsub";
    for (const auto& s : std::get<PubSubSourceSpec>(spec.source).subscriptions) {
      v.datasets.push_back(connector::PubSubSubscriptionDataset(
          connector::SubscriptionDestination::of(s.project, s.subscription)));
    }
    out.emplace_back("source", std::move(v));
  }
  LineageVertex sink;
  sink.role = LineageVertex::Role::kSink;
  if (const auto* b = std::get_if<BigtableSinkSpec>(&spec.sink)) {
    sink.connector = "bigtable";
    sink.datasets.push_back(connector::BigtableDataset(
        connector::TableDestination::of(b->project, b->instance, b->table)));
  } else if (const auto* c = std::get_if<CloudTasksSinkSpec>(&spec.sink)) {
    sink.connector = "cloudtasks";
    sink.datasets.push_back(connector::CloudTasksDataset(
        connector::QueueDestination::of(c->project, c->location, c->queue)));
  } else if (const auto* q = std::get_if<BigQuerySinkSpec>(&spec.sink)) {
    sink.connector = "bigquery";
    sink.datasets.push_back(connector::BigQueryDataset(
        connector::BigQueryTableDestination::of(q->project, q->dataset, q->table)));
  } else if (const auto* s = std::get_if<SpannerSinkSpec>(&spec.sink)) {
    sink.connector = "spanner";
    sink.datasets.push_back(connector::SpannerDataset(
        connector::DatabaseDestination::of(s->project, s->instance, s->database),
        spec.transform.to_spanner ? spec.transform.to_spanner->table : std::string()));
  } else {
    const auto& p = std::get<PubSubSinkSpec>(spec.sink);
    sink.connector = "pubsub";
    sink.datasets.push_back(
        connector::PubSubTopicDataset(connector::TopicDestination::of(p.project, p.topic)));
  }
  out.emplace_back("sink", std::move(sink));
  if (spec.failure_handler.kind == FailureHandlerSpec::Kind::kDeadLetter) {
    LineageVertex dl;
    dl.role = LineageVertex::Role::kSink;
    dl.connector = "pubsub";
    dl.datasets.push_back(connector::PubSubTopicDataset(
        connector::TopicDestination::of(spec.failure_handler.project, spec.failure_handler.topic)));
    out.emplace_back("dead letters", std::move(dl));
  }
  return out;
}

absl::StatusOr<std::string> DescribePipeline(const PipelineSpec& spec) {
  // Validate the sink (and failure handler) builders on a throwaway graph.
  {
    StreamExecutionEnvironment env(MakeExecutionConfig(spec, {}));
    auto stream = env.from_source(std::make_shared<NumberSequenceSource>(0, 0, 1),
                                  WatermarkStrategy<std::int64_t>::no_watermarks(), "probe")
                      .map([](std::int64_t) { return PipelineRecord{}; });
    if (absl::Status s = AttachSink(spec, stream); !s.ok()) {
      return LocateOptionError(spec.options, s);
    }
  }
  std::string out;
  out += fmt::format("pipeline {} (parallelism {})\n\n", spec.name, spec.parallelism);
  out += "plan:\n";
  out += fmt::format("  source     {}\n", SourceLine(spec.source));
  std::string transform;
  if (!spec.transform.keep.empty()) {
    transform += fmt::format("keep if {}; ", Comparisons(spec.transform.keep));
  }
  if (!spec.transform.drop.empty()) {
    transform += fmt::format("drop if {}; ", Comparisons(spec.transform.drop));
  }
  if (spec.transform.ordinal) {
    const auto& o = *spec.transform.ordinal;
    transform += fmt::format("ordinal (from {}) as {}; ", o.start,
                             o.attribute ? "attribute " + *o.attribute : "field " + *o.field);
  }
  if (transform.empty()) transform = "pass every record; ";
  out += fmt::format("  transform  {}\n", transform.substr(0, transform.size() - 2));
  out += fmt::format("  sink       {}\n", SinkLine(spec));
  const char* handler = spec.failure_handler.kind == FailureHandlerSpec::Kind::kFail
                            ? "fail the job"
                        : spec.failure_handler.kind == FailureHandlerSpec::Kind::kLogAndDrop
                            ? "log and drop"
                            : "dead-letter to Pub/Sub";
  out +=
      fmt::format("  failures   {} (record-level rejections and mapping errors only)\n", handler);
  const auto& cp = spec.checkpointing;
  if (cp.interval.count() > 0) {
    out += fmt::format(
        "  checkpoints every {} ({}), into {}, timeout {}, retained {}\n",
        FormatDuration(cp.interval),
        cp.mode == runtime::CheckpointingMode::kExactlyOnce ? "EXACTLY_ONCE" : "AT_LEAST_ONCE",
        cp.dir.empty() ? std::string("memory only (no dir)") : cp.dir, FormatDuration(cp.timeout),
        cp.retained);
  } else {
    out += "  checkpoints off (no restore after a crash)\n";
  }
  out += "\noptions (value, default; * = set in the file):\n";
  std::size_t width = 0;
  for (const auto& o : spec.options) width = std::max(width, o.path.size());
  for (const auto& o : spec.options) {
    out +=
        fmt::format("  {} {:<{}}  {:<24}  default: {}\n", o.set ? '*' : ' ', o.path, width,
                    o.value.empty() ? (o.set ? "-" : o.default_value) : o.value, o.default_value);
  }
  out += "\nlineage:\n";
  for (const auto& [role, v] : PipelineLineage(spec)) {
    for (const auto& d : v.datasets) {
      out += fmt::format("  {:<13} {:<9} {}\n", role, v.connector, connector::DescribeDataset(d));
    }
  }
  return out;
}

}  // namespace gcpstream::pipeline
