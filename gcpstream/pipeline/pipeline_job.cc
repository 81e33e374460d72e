#include "gcpstream/pipeline/pipeline_job.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <stdexcept>
#include <type_traits>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigquery/sink/bigquery_sink.h"
#include "gcpstream/bigtable/requests/single_row_sink.h"
#include "gcpstream/bigtable/sink/bigtable_sink.h"
#include "gcpstream/bigtable/staged/bigtable_staged_sink.h"
#include "gcpstream/pipeline/bigtable_row_mapper.h"
#include "gcpstream/pipeline/cloud_tasks_task_mapper.h"
#include "gcpstream/pipeline/option_location.h"
#include "gcpstream/pipeline/pipeline_source.h"
#include "gcpstream/pipeline/pubsub_message_mapper.h"
#include "gcpstream/pipeline/record_filter.h"
#include "gcpstream/pipeline/record_template.h"
#include "gcpstream/pipeline/spanner_mutation_mapper.h"
#include "gcpstream/pubsub/sink/pubsub_dead_letter_queue.h"
#include "gcpstream/pubsub/sink/pubsub_sink.h"
#include "gcpstream/spanner/sink/spanner_sink.h"
#include "gcpstream/tasks/sink/cloud_tasks_sink.h"

namespace gcpstream::pipeline {
namespace {

// A mapping failure becomes a serialization failure (the sinks route what a serializer throws).
[[noreturn]] void ThrowMappingError(const absl::Status& s) {
  throw std::invalid_argument(std::string(s.message()));
}

// The connection options every sink spec (and the dead-letter queue) carries.
template <typename Builder, typename Spec>
void ApplyConnection(Builder& builder, const Spec& spec) {
  if (spec.emulator_endpoint) builder.emulator_endpoint(*spec.emulator_endpoint);
  if (spec.service_account_key_file) {
    builder.service_account_key_file(*spec.service_account_key_file);
  }
}

// Builds the sink (a builder error keeps its status) and attaches it as the job's sink node.
template <typename Builder>
absl::Status BuildAndAttach(Builder& builder, DataStream<PipelineRecord>& stream) {
  GCP_ASSIGN_OR_RETURN(auto built, builder.build());
  stream.sink_to(std::move(built), kSinkNode);
  return absl::OkStatus();
}

// The staged (exactly-once) Bigtable sink: no failure handler (a record that cannot be staged
// fails the job) and a table provisioned beforehand.
absl::Status AttachStagedBigtable(const PipelineSpec& spec, const BigtableSinkSpec& sink,
                                  const BigtableRowMapper& mapper,
                                  DataStream<PipelineRecord> stream) {
  if (spec.failure_handler.kind != FailureHandlerSpec::Kind::kFail) {
    return absl::InvalidArgumentError(
        "delivery_guarantee EXACTLY_ONCE takes failure_handler: fail only (a record that cannot "
        "be staged fails the job)");
  }
  const auto& checkpointing = stream.environment()->config().checkpointing;
  if (checkpointing.interval.count() <= 0 || checkpointing.directory.empty() ||
      checkpointing.mode != runtime::CheckpointingMode::kExactlyOnce) {
    return absl::InvalidArgumentError(
        "delivery_guarantee EXACTLY_ONCE needs exactly-once checkpoints written to a directory "
        "(checkpointing.interval and checkpointing.dir): its writes are owned by checkpoints, and "
        "a run that cannot be restored would replay its inputs under new identities");
  }
  auto builder = bigtable::BigtableStagedSink<PipelineRecord>::builder();
  builder.table(connector::TableDestination::of(sink.project, sink.instance, sink.table))
      .app_profile_id(sink.app_profile_id)
      .staged_options(sink.staged_options)
      .serializer(bigtable::BigtableSerializationSchema<PipelineRecord>::of(
          [mapper](const PipelineRecord& r,
                   const SinkWriterContext&) -> std::optional<bigtable::RowMutationEntry> {
            auto entry = mapper.map(r);
            if (!entry.ok()) ThrowMappingError(entry.status());
            return std::move(*entry);
          }));
  ApplyConnection(builder, sink);
  return BuildAndAttach(builder, stream);
}

// Which to_bigtable keys a sink mode takes; INVALID_ARGUMENT naming the first one it does not.
absl::Status CheckMappingForMode(const BigtableMappingSpec& m, BigtableSinkSpec::Mode mode) {
  using Mode = BigtableSinkSpec::Mode;
  auto refuse = [](const char* key, const char* mode_name) {
    return absl::InvalidArgumentError(
        fmt::format("transform.to_bigtable.{} does not apply to mode {}", key, mode_name));
  };
  if (mode == Mode::kReadModifyWrite) {
    if (!m.columns.empty()) return refuse("columns", "READ_MODIFY_WRITE");
    if (!m.add_to_cell.empty()) return refuse("add_to_cell", "READ_MODIFY_WRITE");
    if (m.when) return refuse("when", "READ_MODIFY_WRITE");
    if (!m.otherwise.empty()) return refuse("otherwise", "READ_MODIFY_WRITE");
    if (m.timestamp) return refuse("timestamp", "READ_MODIFY_WRITE (the service stamps it)");
    if (m.increment.empty() && m.append.empty()) {
      return absl::InvalidArgumentError(
          "mode READ_MODIFY_WRITE needs transform.to_bigtable.increment or append");
    }
    return absl::OkStatus();
  }
  if (!m.increment.empty()) return refuse("increment", "other than READ_MODIFY_WRITE");
  if (!m.append.empty()) return refuse("append", "other than READ_MODIFY_WRITE");
  if (mode == Mode::kConditional) {
    if (!m.when) {
      return absl::InvalidArgumentError("mode CONDITIONAL needs transform.to_bigtable.when");
    }
    return absl::OkStatus();
  }
  if (m.when) return refuse("when", "MUTATE_ROWS");
  if (!m.otherwise.empty()) return refuse("otherwise", "MUTATE_ROWS");
  return absl::OkStatus();
}

// The single-row sinks: one CheckAndMutateRow / ReadModifyWriteRow per record.
template <typename SinkT, typename MapFn>
absl::Status AttachSingleRowBigtable(const BigtableSinkSpec& sink,
                                     std::shared_ptr<connector::FailureHandler> handler, MapFn map,
                                     DataStream<PipelineRecord> stream) {
  auto builder = SinkT::builder();
  builder.table(connector::TableDestination::of(sink.project, sink.instance, sink.table))
      .request_options(sink.request_options)
      .failure_handler(std::move(handler))
      .serializer([map = std::move(map)](const PipelineRecord& r) {
        auto request = map(r);
        if (!request.ok()) ThrowMappingError(request.status());
        return std::make_optional(*std::move(request));
      });
  if (!sink.app_profile_id.empty()) builder.app_profile_id(sink.app_profile_id);
  if constexpr (std::is_same_v<SinkT, bigtable::BigtableConditionalSink<PipelineRecord>>) {
    builder.empty_branch_policy(sink.fail_on_empty_branch ? bigtable::EmptyBranchPolicy::kFail
                                                          : bigtable::EmptyBranchPolicy::kIgnore);
  }
  ApplyConnection(builder, sink);
  return BuildAndAttach(builder, stream);
}

absl::Status AttachBigtable(const PipelineSpec& spec, const BigtableSinkSpec& sink,
                            std::shared_ptr<connector::FailureHandler> handler,
                            DataStream<PipelineRecord> stream) {
  GCP_RETURN_IF_ERROR(CheckMappingForMode(*spec.transform.to_bigtable, sink.mode));
  GCP_ASSIGN_OR_RETURN(BigtableRowMapper mapper,
                       BigtableRowMapper::make(*spec.transform.to_bigtable));
  if (sink.mode == BigtableSinkSpec::Mode::kConditional) {
    return AttachSingleRowBigtable<bigtable::BigtableConditionalSink<PipelineRecord>>(
        sink, std::move(handler),
        [mapper](const PipelineRecord& r) { return mapper.map_conditional(r); }, std::move(stream));
  }
  if (sink.mode == BigtableSinkSpec::Mode::kReadModifyWrite) {
    return AttachSingleRowBigtable<bigtable::BigtableReadModifyWriteSink<PipelineRecord>>(
        sink, std::move(handler),
        [mapper](const PipelineRecord& r) { return mapper.map_read_modify_write(r); },
        std::move(stream));
  }
  if (sink.exactly_once) return AttachStagedBigtable(spec, sink, mapper, std::move(stream));
  auto builder = bigtable::BigtableSink<PipelineRecord>::builder();
  builder.table(connector::TableDestination::of(sink.project, sink.instance, sink.table))
      .serializer(bigtable::BigtableSerializationSchema<PipelineRecord>::of(
          [mapper](const PipelineRecord& r,
                   const SinkWriterContext&) -> std::optional<bigtable::RowMutationEntry> {
            auto entry = mapper.map(r);
            if (!entry.ok()) ThrowMappingError(entry.status());
            return std::move(*entry);
          }))
      .writer_options(sink.writer_options)
      .failed_mutation_handler(std::move(handler));
  if (!sink.app_profile_id.empty()) builder.app_profile_id(sink.app_profile_id);
  ApplyConnection(builder, sink);
  builder.create_disposition(sink.create_if_needed ? bigtable::CreateDisposition::kCreateIfNeeded
                                                   : bigtable::CreateDisposition::kCreateNever);
  if (sink.table_create_options) {
    builder.table_create_options(*sink.table_create_options);
  } else if (sink.create_if_needed) {
    // Creating the table needs its families: the mapping's family is the natural one.
    bigtable::TableCreateOptions options;
    options.column_family(spec.transform.to_bigtable->family);
    builder.table_create_options(options);
  }
  return BuildAndAttach(builder, stream);
}

absl::Status AttachPubSub(const PipelineSpec& spec, const PubSubSinkSpec& sink,
                          std::shared_ptr<connector::FailureHandler> handler,
                          DataStream<PipelineRecord> stream) {
  GCP_ASSIGN_OR_RETURN(
      PubSubMessageMapper mapper,
      PubSubMessageMapper::make(spec.transform.to_pubsub.value_or(PubSubMappingSpec{})));
  auto builder = pubsub::PubSubSink<PipelineRecord>::builder();
  builder.topic(connector::TopicDestination::of(sink.project, sink.topic))
      .serializer(pubsub::PubSubSerializationSchema<PipelineRecord>::of(
          [mapper](const PipelineRecord& r,
                   const SinkWriterContext&) -> std::optional<google::pubsub::v1::PubsubMessage> {
            auto message = mapper.map(r);
            if (!message.ok()) ThrowMappingError(message.status());
            return std::move(*message);
          }))
      .publisher_options(sink.publisher_options)
      .failed_message_handler(std::move(handler))
      .create_disposition(sink.create_if_needed ? pubsub::CreateDisposition::kCreateIfNeeded
                                                : pubsub::CreateDisposition::kCreateNever);
  if (sink.topic_create_options) builder.topic_create_options(*sink.topic_create_options);
  ApplyConnection(builder, sink);
  if (spec.transform.to_pubsub && spec.transform.to_pubsub->ordering_key &&
      !sink.publisher_options.enable_message_ordering) {
    return absl::InvalidArgumentError(
        "transform.to_pubsub.ordering_key needs sink.publisher_options.enable_message_ordering: "
        "true (the Pub/Sub sink refuses keyed messages without it)");
  }
  return BuildAndAttach(builder, stream);
}

absl::Status AttachCloudTasks(const PipelineSpec& spec, const CloudTasksSinkSpec& sink,
                              std::shared_ptr<connector::FailureHandler> handler,
                              DataStream<PipelineRecord> stream) {
  GCP_ASSIGN_OR_RETURN(CloudTasksTaskMapper mapper,
                       CloudTasksTaskMapper::make(*spec.transform.to_cloud_tasks));
  auto builder = tasks::CloudTasksSink<PipelineRecord>::builder();
  builder.queue(connector::QueueDestination::of(sink.project, sink.location, sink.queue))
      .serializer(tasks::CloudTasksSerializationSchema<PipelineRecord>::of_status(
          [mapper](const PipelineRecord& r, const SinkWriterContext&)
              -> absl::StatusOr<std::optional<google::cloud::tasks::v2::Task>> {
            GCP_ASSIGN_OR_RETURN(auto task, mapper.map(r));
            return std::optional<google::cloud::tasks::v2::Task>(std::move(task));
          }))
      .writer_options(sink.writer_options)
      .failed_task_handler(std::move(handler));
  if (spec.transform.to_cloud_tasks->task_id) {
    builder.task_id_extractor([mapper](const PipelineRecord& r) {
      auto key = mapper.task_key(r);
      if (!key.ok()) ThrowMappingError(key.status());
      return key->value_or("");
    });
  }
  ApplyConnection(builder, sink);
  return BuildAndAttach(builder, stream);
}

absl::Status AttachSpanner(const PipelineSpec& spec, const SpannerSinkSpec& sink,
                           std::shared_ptr<connector::FailureHandler> handler,
                           DataStream<PipelineRecord> stream) {
  GCP_ASSIGN_OR_RETURN(SpannerMutationMapper mapper,
                       SpannerMutationMapper::make(*spec.transform.to_spanner));
  if (spec.transform.to_spanner->operation == "insert" &&
      spec.failure_handler.kind == FailureHandlerSpec::Kind::kFail) {
    spdlog::warn(
        "to_spanner.operation is insert and failure_handler is fail: BatchWrite is not "
        "replay-protected, so a row written again (after a restore, or a retry whose answer was "
        "lost) is refused ALREADY_EXISTS and fails the job, and a restore past such a row never "
        "succeeds. Use insert_or_update or replace, or a failure handler that keeps those "
        "refusals (log_and_drop, dead_letter)");
  }
  auto builder = spanner::SpannerSink<PipelineRecord>::builder();
  builder.database(connector::DatabaseDestination::of(sink.project, sink.instance, sink.database))
      .serializer(
          [mapper](const PipelineRecord& r,
                   const SinkWriterContext&) -> absl::StatusOr<std::optional<spanner::Mutation>> {
            GCP_ASSIGN_OR_RETURN(auto m, mapper.map(r));
            return std::optional<spanner::Mutation>(std::move(m));
          })
      .writer_options(sink.writer_options)
      .constraint_violation_policy(sink.route_constraint_violations
                                       ? spanner::ConstraintViolationPolicy::kRouteToFailureHandler
                                       : spanner::ConstraintViolationPolicy::kFailJob)
      .failed_mutation_handler(std::move(handler));
  ApplyConnection(builder, sink);
  return BuildAndAttach(builder, stream);
}

absl::Status AttachBigQuery(const BigQuerySinkSpec& sink,
                            std::shared_ptr<connector::FailureHandler> handler,
                            DataStream<PipelineRecord> stream) {
  std::vector<std::string> columns;
  for (const auto& f : sink.schema.fields) columns.push_back(f.name);
  // The row is the record's fields the schema names; the others are not written.
  GCP_ASSIGN_OR_RETURN(
      auto serializer,
      bigquery::BigQuerySerializationSchema<PipelineRecord>::json(
          sink.schema,
          [columns](const PipelineRecord& r) -> absl::StatusOr<std::optional<nlohmann::json>> {
            nlohmann::json row = nlohmann::json::object();
            for (const auto& c : columns) {
              auto it = r.fields.find(c);
              if (it != r.fields.end()) row[c] = *it;
            }
            return std::optional<nlohmann::json>(std::move(row));
          }));
  auto builder = bigquery::BigQuerySink<PipelineRecord>::builder();
  if (sink.table.find('{') == std::string::npos) {
    builder.destination(
        connector::BigQueryTableDestination::of(sink.project, sink.dataset, sink.table));
  } else {
    // Each record's table from its fields. A record the template cannot name a valid table
    // for fails the job (a configuration error), after saying which and why.
    GCP_ASSIGN_OR_RETURN(RecordTemplate table, RecordTemplate::parse(sink.table));
    builder.destination_resolver(
        [table, project = sink.project, dataset = sink.dataset](
            const PipelineRecord& r,
            const SinkWriterContext&) -> std::optional<connector::BigQueryTableDestination> {
          absl::StatusOr<std::string> id = table.render(r);
          absl::Status valid = id.ok() ? bigquery::ValidateTableId(*id) : id.status();
          if (!valid.ok()) {
            spdlog::error("bigquery sink: table \"{}\" names no table for a record: {}",
                          table.text(), valid.message());
            return std::nullopt;
          }
          return connector::BigQueryTableDestination::of(project, dataset, *id);
        });
  }
  builder.serializer(std::move(serializer))
      .write_method(sink.write_method)
      .create_disposition(sink.create_if_needed ? bigquery::CreateDisposition::kCreateIfNeeded
                                                : bigquery::CreateDisposition::kCreateNever)
      .table_create_options(sink.table_create_options)
      .schema_update_options(sink.schema_update_options)
      .writer_options(sink.writer_options)
      .failure_handler(std::move(handler));
  if (sink.emulator_rest_endpoint) builder.emulator_rest_endpoint(*sink.emulator_rest_endpoint);
  ApplyConnection(builder, sink);
  if (sink.file_loads) {
    builder.file_loads_options(*sink.file_loads);
    GCP_ASSIGN_OR_RETURN(auto built, builder.build_file_loads());
    stream.sink_to(std::move(built), kSinkNode);
    return absl::OkStatus();
  }
  return BuildAndAttach(builder, stream);
}

}  // namespace

runtime::ExecutionConfig MakeExecutionConfig(const PipelineSpec& spec,
                                             const RunOverrides& overrides) {
  runtime::ExecutionConfig config;
  config.parallelism = overrides.parallelism.value_or(spec.parallelism);
  auto& cp = config.checkpointing;
  cp.interval = overrides.checkpoint_interval.value_or(spec.checkpointing.interval);
  cp.directory = overrides.checkpoint_dir.value_or(spec.checkpointing.dir);
  cp.timeout = spec.checkpointing.timeout;
  cp.min_pause_between = spec.checkpointing.min_pause_between;
  cp.tolerable_failed_checkpoints = spec.checkpointing.tolerable_failed_checkpoints;
  cp.mode = spec.checkpointing.mode;
  cp.retained = spec.checkpointing.retained;
  config.restart_strategy = spec.restart.strategy;
  config.metrics_port = overrides.metrics_port;
  config.ui_port = overrides.ui_port;
  config.ui_bind_address = overrides.ui_bind_address;
  config.ui_assets_dir = overrides.ui_assets_dir;
  config.restore_from = overrides.restore_from;
  config.allow_non_restored_state = overrides.allow_non_restored_state;
  return config;
}

absl::StatusOr<std::shared_ptr<connector::FailureHandler>> MakeFailureHandler(
    const FailureHandlerSpec& spec) {
  switch (spec.kind) {
    case FailureHandlerSpec::Kind::kFail:
      return connector::FailureHandler::fail_job();
    case FailureHandlerSpec::Kind::kLogAndDrop:
      return connector::FailureHandler::log_and_drop();
    case FailureHandlerSpec::Kind::kDeadLetter:
      break;
  }
  auto builder = pubsub::PubSubDeadLetterQueue::builder();
  builder.topic(connector::TopicDestination::of(spec.project, spec.topic))
      .max_in_flight_messages(spec.max_in_flight_messages)
      .flush_timeout(spec.flush_timeout)
      .shutdown_timeout(spec.shutdown_timeout);
  ApplyConnection(builder, spec);
  GCP_ASSIGN_OR_RETURN(auto queue, builder.build());
  return connector::FailureHandler::send_to_dead_letter_queue(std::move(queue));
}

absl::Status AttachSink(const PipelineSpec& spec, DataStream<PipelineRecord> stream) {
  GCP_ASSIGN_OR_RETURN(auto handler, MakeFailureHandler(spec.failure_handler));
  absl::Status status;
  if (const auto* bt = std::get_if<BigtableSinkSpec>(&spec.sink)) {
    status = AttachBigtable(spec, *bt, std::move(handler), stream);
  } else if (const auto* ct = std::get_if<CloudTasksSinkSpec>(&spec.sink)) {
    status = AttachCloudTasks(spec, *ct, std::move(handler), stream);
  } else if (const auto* sp = std::get_if<SpannerSinkSpec>(&spec.sink)) {
    status = AttachSpanner(spec, *sp, std::move(handler), stream);
  } else if (const auto* bq = std::get_if<BigQuerySinkSpec>(&spec.sink)) {
    status = AttachBigQuery(*bq, std::move(handler), stream);
  } else {
    status = AttachPubSub(spec, std::get<PubSubSinkSpec>(spec.sink), std::move(handler), stream);
  }
  if (!status.ok()) {
    return absl::Status(status.code(), fmt::format("sink: {}", status.message()));
  }
  StreamExecutionEnvironment* env = stream.environment();
  env->node(static_cast<int>(env->graph().nodes.size()) - 1).uid = "sink";
  return absl::OkStatus();
}

namespace {

absl::StatusOr<std::unique_ptr<StreamExecutionEnvironment>> Assemble(
    const PipelineSpec& spec, const RunOverrides& overrides) {
  auto env = std::make_unique<StreamExecutionEnvironment>(MakeExecutionConfig(spec, overrides));
  GCP_ASSIGN_OR_RETURN(PipelineSource source, MakePipelineSource(spec.source));
  DataStream<PipelineRecord> stream = source.add_to(*env, kSourceNode);
  const TransformSpec transform = spec.transform;
  auto transformed = stream.flat_map<PipelineRecord>(
      [transform](PipelineRecord record, Collector<PipelineRecord>& out) {
        if (!Passes(transform, record)) return;
        if (transform.ordinal && record.ordinal) {
          const std::int64_t n = *record.ordinal + transform.ordinal->start;
          if (transform.ordinal->attribute) {
            record.attributes[*transform.ordinal->attribute] = std::to_string(n);
          }
          if (transform.ordinal->field) record.fields[*transform.ordinal->field] = n;
        }
        out.collect(std::move(record));
      },
      kTransformNode);
  transformed.uid("transform");
  GCP_RETURN_IF_ERROR(AttachSink(spec, transformed));
  return env;
}

}  // namespace

absl::StatusOr<std::unique_ptr<StreamExecutionEnvironment>> AssembleJob(
    const PipelineSpec& spec, const RunOverrides& overrides) {
  auto env = Assemble(spec, overrides);
  if (!env.ok()) return LocateOptionError(spec.options, env.status());
  return env;
}

}  // namespace gcpstream::pipeline
