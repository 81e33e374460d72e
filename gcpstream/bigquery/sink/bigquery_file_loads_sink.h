#ifndef GCPSTREAM_BIGQUERY_SINK_BIGQUERY_FILE_LOADS_SINK_H_
#define GCPSTREAM_BIGQUERY_SINK_BIGQUERY_FILE_LOADS_SINK_H_

#include "gcpstream/bigquery/sink/bigquery_sink.h"
#include "gcpstream/bigquery/sink/load_job_committer.h"
#include "gcpstream/bigquery/sink/staged_files.h"
#include "gcpstream/bigquery/sink/staged_files_ledger.h"
#include "gcpstream/bigquery/staging/avro_row_encoder.h"
#include "gcpstream/bigquery/staging/avro_staging_schema.h"

namespace gcpstream::bigquery {

// Random hex naming one writer instance's staging files (unique per run and attempt).
std::string NewStagingRunId();

// Writes records to BigQuery through load jobs (write_method FILE_LOADS, always exactly once;
// ../shared/spec/bigquery.md "File loads"):
//  - each writer subtask encodes rows into Avro (AvroRowEncoder: a value a load would refuse
//    fails that row alone, for the failure handler) and streams them into one staging file per
//    table under file_loads_options().staging_path
//    ("<prefix><run>/<table>/<subtask>-<attempt>-<n>.avro"), finished at
//    max_staging_file_bytes and at every checkpoint; memory per open table is about 3 MiB
//    whatever the volume (an upload chunk and an Avro block);
//  - a checkpoint's finished files become committables (StagedFiles, stamped with the
//    checkpoint id; -1 at the end of a bounded input); once the checkpoint completed the
//    committer (LoadJobCommitter) loads them with a deterministic job id, confirming a 409
//    by the job's files, and deletes them after the load succeeded;
//  - rows are visible after their checkpoint's load finished. A restore re-commits the
//    restored committables and re-attaches to the jobs by id: every row once. A start without
//    state loses the rows of checkpoints whose loads had not been submitted.
// Needs checkpointing in a streaming job (without it, rows load only at the end of a bounded
// input). Not built: schema widening before a load, WRITE_TRUNCATE_DATA, more than 10,000
// files per load (temporary tables and copy jobs), one committer for the whole job (each
// subtask loads its own files), Parquet.
//
//   auto sink = BigQuerySink<Flight>::builder()
//                   .destination(BigQueryTableDestination::of("p", "flights", "delays"))
//                   .serializer(*serializer)
//                   .write_method(WriteMethod::kFileLoads)
//                   .file_loads_options({.staging_path = "gs://my-staging/flights"})
//                   .build_file_loads();
template <typename T>
class BigQueryFileLoadsSink final : public Sink<T>,
                                    public SupportsCommitter<StagedFiles>,
                                    public LineageVertexProvider {
 public:
  using Builder = typename BigQuerySink<T>::Builder;

  absl::StatusOr<std::unique_ptr<SinkWriter<T>>> create_writer(
      WriterInitContext& context) const override {
    GCP_RETURN_IF_ERROR(CheckDisposition(context.parallelism()));
    BigQueryWriterConfig config;
    config.options = b_.options_;
    config.create_disposition = b_.disposition_;
    config.table_create_options = b_.create_options_;
    config.schema = b_.serializer_.schema();
    config.writer_descriptor = b_.serializer_.writer_descriptor();
    config.failure_handler = b_.handler_ ? b_.handler_ : connector::FailureHandler::fail_job();
    if (b_.admin_) {
      config.admin = b_.admin_;
    } else {
      GCP_ASSIGN_OR_RETURN(config.admin, MakeTableAdmin(b_.client_, b_.emulator_rest_));
    }
    GCP_ASSIGN_OR_RETURN(gcs::GcsUri location, b_.file_loads_->staging_location());
    BigQueryWriterConfig::Staging staging;
    GCP_ASSIGN_OR_RETURN(staging.storage, storage());
    staging.ledger = std::make_shared<StagedFilesLedger>();
    staging.options.bucket = location.bucket;
    staging.options.prefix = location.object;
    staging.options.run = NewStagingRunId();
    staging.options.subtask = context.subtask_index();
    staging.options.attempt = context.attempt_number();
    staging.options.max_file_bytes = b_.file_loads_->max_staging_file_bytes;
    staging.options.retry = b_.options_.recovery;
    std::shared_ptr<StagedFilesLedger> ledger = staging.ledger;
    config.staging = std::move(staging);
    auto serialize = [serializer = b_.serializer_](const T& element, const SinkWriterContext& ctx)
        -> absl::StatusOr<std::optional<BigQueryRow>> {
      return connector::CallSerializer<BigQueryRow>(
          [&] { return serializer.serialize(element, ctx); });
    };
    auto writer = std::make_unique<Writer>(
        std::make_unique<Front>(b_.resolver_, std::move(serialize),
                                MakeBigQueryWriterCore(std::move(config), context)),
        std::move(ledger));
    GCP_RETURN_IF_ERROR(writer->open());
    return std::unique_ptr<SinkWriter<T>>(std::move(writer));
  }

  absl::StatusOr<std::unique_ptr<Committer<StagedFiles>>> create_committer(
      CommitterInitContext& context) const override {
    GCP_RETURN_IF_ERROR(CheckDisposition(context.parallelism()));
    LoadJobCommitterConfig c;
    if (b_.admin_) {
      c.admin = b_.admin_;
    } else {
      GCP_ASSIGN_OR_RETURN(c.admin, MakeTableAdmin(b_.client_, b_.emulator_rest_));
    }
    GCP_ASSIGN_OR_RETURN(c.storage, storage());
    c.write_disposition = std::string(WriteDispositionName(b_.file_loads_->write_disposition));
    c.create_disposition = b_.disposition_;
    c.schema = b_.serializer_.schema();
    c.table_create_options = b_.create_options_;
    c.poll_initial_backoff = b_.file_loads_->load_job_poll_initial_backoff;
    c.poll_max_backoff = b_.file_loads_->load_job_poll_max_backoff;
    c.recovery = b_.options_.recovery;
    return std::unique_ptr<Committer<StagedFiles>>(
        std::make_unique<LoadJobCommitter>(std::move(c), context.metric_group()));
  }
  const VersionedSerializer<StagedFiles>& committable_serializer() const override {
    return serializer_;
  }

  LineageVertex lineage_vertex() const override { return BigQuerySink<T>::SinkLineage(b_.fixed_); }

  const FileLoadsOptions& file_loads_options() const { return *b_.file_loads_; }

 private:
  friend class BigQuerySink<T>::Builder;
  using Front =
      connector::AsyncSinkWriterFront<T, connector::BigQueryTableDestination, BigQueryRow>;
  using Writer = connector::CommittingSinkWriterFront<T, connector::BigQueryTableDestination,
                                                      BigQueryRow, StagedFiles, StagedFiles>;
  explicit BigQueryFileLoadsSink(Builder b) : b_(std::move(b)) {}

  // Each subtask commits its own files: a replacing or refusing disposition would have each
  // subtask's load replace (or refuse) the others' rows.
  absl::Status CheckDisposition(int parallelism) const {
    if (parallelism <= 1 || b_.file_loads_->write_disposition == WriteDisposition::kWriteAppend) {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(fmt::format(
        "FILE_LOADS with {} at parallelism {}: each subtask loads its own files, so each load "
        "would replace or refuse the others' rows; use parallelism 1 (one committer for the "
        "whole job is not built)",
        WriteDispositionName(b_.file_loads_->write_disposition), parallelism));
  }

  absl::StatusOr<std::shared_ptr<gcs::StorageClient>> storage() const {
    if (b_.storage_) return b_.storage_;
    return MakeStorageClient(b_.client_, b_.emulator_rest_);
  }

  Builder b_;
  StagedFilesSerializer serializer_;
};

template <typename T>
absl::StatusOr<std::shared_ptr<BigQueryFileLoadsSink<T>>>
BigQuerySink<T>::Builder::build_file_loads() const {
  if (method_ != WriteMethod::kFileLoads) {
    return absl::InvalidArgumentError(
        "build_file_loads() needs write_method FILE_LOADS (the Storage Write API methods are "
        "built with build())");
  }
  if (!file_loads_) {
    return absl::InvalidArgumentError(
        "write_method FILE_LOADS needs file_loads_options with a staging_path (gs://...)");
  }
  GCP_RETURN_IF_ERROR(validate_common());
  GCP_RETURN_IF_ERROR(file_loads_->validate());
  if (cdc_ || cdc_table_) {
    return absl::InvalidArgumentError(
        "cdc_options need write_method STORAGE_API_AT_LEAST_ONCE: BigQuery applies CDC changes "
        "only from the default stream");
  }
  if (schema_updates_.any()) {
    return absl::InvalidArgumentError(
        "schema_update_options are not built for FILE_LOADS yet (a load carries the live "
        "table's schema; a staged column the table lacks is ignored)");
  }
  // What a load cannot carry is refused now, not at the first row.
  GCP_ASSIGN_OR_RETURN(auto encoder, staging::AvroRowEncoder::Create(
                                         serializer_.schema(), serializer_.writer_descriptor()));
  return std::shared_ptr<BigQueryFileLoadsSink<T>>(new BigQueryFileLoadsSink<T>(*this));
}

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_BIGQUERY_FILE_LOADS_SINK_H_
