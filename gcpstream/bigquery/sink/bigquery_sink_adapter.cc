#include "gcpstream/bigquery/sink/bigquery_sink_adapter.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <set>
#include <thread>

#include "absl/strings/cord.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigquery/schema/schema_reconciliation.h"
#include "gcpstream/bigquery/sink/append_retry.h"
#include "gcpstream/bigquery/sink/buffered_stream_client.h"
#include "gcpstream/bigquery/sink/default_stream_client.h"
#include "gcpstream/connector/await_on_mailbox.h"
#include "gcpstream/connector/in_flight_gate.h"
#include "gcpstream/connector/status_classifier.h"

namespace gcpstream::bigquery {
namespace {

using connector::BigQueryTableDestination;

constexpr char kAbandonedCounter[] = "bigqueryWriterShutdownsAbandoned";
// One AppendRows request carries at most 10 MB; a row alone over this cannot be sent.
constexpr std::size_t kMaxRowBytes = 9 * 1000 * 1000;

class BigQuerySinkAdapter final
    : public connector::AsyncSinkAdapter<BigQueryTableDestination, BigQueryRow> {
 public:
  BigQuerySinkAdapter(BigQueryWriterConfig config, WriterInitContext& context)
      : config_(std::move(config)),
        mailbox_(context.mailbox_executor()),
        tables_created_(context.metric_group().counter("tablesCreated")),
        append_retries_(context.metric_group().counter("appendRetries")),
        schema_updates_(context.metric_group().counter("schemaUpdates")),
        files_staged_(context.metric_group().counter("filesStaged")),
        timers_(std::make_shared<util::TimerThread>()) {}

  std::string describe(const BigQueryTableDestination& t) const override {
    return t.resource_name();
  }
  std::string metric_scope(const BigQueryTableDestination& t) const override { return t.table; }
  // Every table shares the writer's one channel.
  std::string group_of(const BigQueryTableDestination&) const override { return "bigquery"; }

  absl::StatusOr<std::shared_ptr<connector::DestinationClient<BigQueryRow>>> open(
      const BigQueryTableDestination& t,
      std::shared_ptr<connector::SinkOutcomeListener<BigQueryRow>> listener) override {
    if (t.project.empty() || t.dataset.empty() || t.table.empty()) {
      return absl::FailedPreconditionError(
          fmt::format("the BigQuery sink's destination {} has an empty project, dataset or table",
                      t.resource_name()));
    }
    if (config_.staging) {
      auto encoder = staging::AvroRowEncoder::Create(config_.schema, config_.writer_descriptor);
      if (!encoder.ok()) {
        return absl::Status(encoder.status().code(),
                            fmt::format("FILE_LOADS cannot stage the rows of {}: {}",
                                        t.resource_name(), encoder.status().message()));
      }
      StagingFileOptions options = config_.staging->options;
      options.table_id = t.table;
      return std::shared_ptr<connector::DestinationClient<BigQueryRow>>(
          std::make_shared<StagingFileClient>(t.resource_name(), *std::move(encoder),
                                              config_.staging->storage, config_.staging->ledger,
                                              std::move(options), std::move(listener),
                                              [c = &files_staged_] { c->inc(); }));
    }
    // The hooks hold the metric group's counter (thread-safe), never the adapter.
    if (config_.ledger) {
      auto client = std::make_shared<BufferedStreamClient>(
          config_.stub, t.resource_name(), config_.writer_descriptor, config_.options,
          config_.ledger, std::move(listener), [c = &append_retries_] { c->inc(); });
      client->start();
      return std::shared_ptr<connector::DestinationClient<BigQueryRow>>(std::move(client));
    }
    auto client = std::make_shared<DefaultStreamClient>(
        config_.stub, t.resource_name(), config_.writer_descriptor, config_.options,
        std::move(listener), timers_, [c = &append_retries_] { c->inc(); });
    return std::shared_ptr<connector::DestinationClient<BigQueryRow>>(std::move(client));
  }

  // CDC: the table must hold the contract before its first row (a table without a primary
  // key would refuse every row; one with another key would apply the changes to other rows).
  // The same steps as a repair (read, verify, create with the key), on the recovery schedule.
  absl::Status check(const BigQueryTableDestination& t) override {
    if (!config_.cdc) return absl::OkStatus();
    connector::RecoveryBackoff backoff(config_.options.recovery);
    while (true) {
      connector::RepairResult r = repair(t, {});
      if (r.status.ok()) return absl::OkStatus();
      if (r.permanent) return r.status;
      const std::optional<std::chrono::milliseconds> delay = backoff.next();
      if (!delay) {
        return absl::Status(r.status.code(),
                            fmt::format("checking the CDC contract of BigQuery table {} failed "
                                        "after {} attempts: {}",
                                        t.resource_name(), backoff.attempts(), r.status.message()));
      }
      spdlog::warn("BigQuery sink: checking the CDC contract of {} failed ({}); retrying in {} ms",
                   t.resource_name(), Describe(r.status), delay->count());
      GCP_RETURN_IF_ERROR(connector::SleepYielding(mailbox_, *delay));
    }
  }

  std::int64_t size_of(const BigQueryRow& row) const override {
    return static_cast<std::int64_t>(row.bytes.size());
  }

  absl::Status precheck(const BigQueryTableDestination& t, const BigQueryRow& row) override {
    // FILE_LOADS sends no AppendRows: its rows are bounded by the Avro block limit instead
    // (AvroContainerWriter, 16 MB), checked by the staging client.
    if (!config_.staging && row.bytes.size() > kMaxRowBytes) {
      // A failure of this row alone (never of the job): marked as a row error.
      absl::Status refused = absl::InvalidArgumentError(
          fmt::format("a row of {} bytes for {} cannot fit an AppendRows request (10 MB)",
                      row.bytes.size(), t.resource_name()));
      refused.SetPayload(kRowErrorPayload, absl::Cord("1"));
      return refused;
    }
    return absl::OkStatus();
  }

  connector::FailureClass classify(const absl::Status& status) const override {
    const bool create = config_.create_disposition == CreateDisposition::kCreateIfNeeded;
    if (status.GetPayload(kRowErrorPayload)) return connector::FailureClass::kRecordLevel;
    if (status.GetPayload(kStreamFailurePayload)) return connector::FailureClass::kFatal;
    // The service masks a missing table behind PERMISSION_DENIED: under CREATE_IF_NEEDED it is
    // "the table may not be there", repaired like NOT_FOUND.
    if (create && status.code() == absl::StatusCode::kPermissionDenied) {
      return connector::FailureClass::kRepairable;
    }
    // A table without the rows' columns, when the sink may add them: reconciled by repair().
    if (config_.schema_updates.any() &&
        StorageErrorOf(status) == storage_v1::StorageError::SCHEMA_MISMATCH_EXTRA_FIELDS) {
      return connector::FailureClass::kRepairable;
    }
    // At least once: a transient failure the client's in-stream retries did not outlast (a long
    // quota refusal, an outage) is re-appended on the recovery budget, as the reference's writer
    // does; repair() finds the table in place and the rows are resent on a new connection.
    // Never on the exactly-once path: its client re-appends at the original offsets itself,
    // and rows handed back there would be appended at new ones.
    if (!config_.ledger && TransientCode(status.code())) {
      return connector::FailureClass::kRepairable;
    }
    // INVALID_ARGUMENT without row detail is about the request or the schema: fatal.
    if (status.code() == absl::StatusCode::kInvalidArgument) return connector::FailureClass::kFatal;
    connector::ClassifierRules rules;
    rules.not_found_is_repairable = create;
    return connector::Classify(status, rules);
  }

  absl::StatusCode repair_error_class(const absl::Status& status) const override {
    return TransientCode(status.code()) ? status.code() : absl::StatusCode::kNotFound;
  }

  bool releasable(const BigQueryTableDestination& t) const override {
    return !config_.ledger || config_.ledger->clean(t.resource_name());
  }

  bool is_cascade(const absl::Status& status) const override {
    return status.GetPayload(kRefusedWithItsRequestPayload).has_value();
  }

  // Makes the table able to take the rows: an existing table is reconciled with the rows'
  // schema (when schema_update_options allow a change), a missing one is created.
  connector::RepairResult repair(const BigQueryTableDestination& t,
                                 const std::vector<const BigQueryRow*>&) override {
    connector::RepairResult r;
    std::shared_ptr<TableAdmin> admin = config_.admin;
    auto live = admin_call("bigquery table read", [admin, t] { return admin->get_table(t); });
    if (!live.ok()) {
      r.status = live.status();
      r.permanent = true;  // the subtask is being cancelled
      return r;
    }
    if (live->ok()) {
      // CDC: a table re-created behind the job's back may have another key (or none).
      if (config_.cdc) {
        r.status = VerifyCdcTable(t.resource_name(), **live, *config_.cdc, config_.schema);
        if (!r.status.ok()) {
          r.permanent = true;
          return r;
        }
      }
      return reconcile(t, **live);
    }
    const absl::StatusCode code = live->status().code();
    if (code != absl::StatusCode::kNotFound && code != absl::StatusCode::kPermissionDenied) {
      r.status = live->status();
      r.permanent = !Retriable(live->status());
      spdlog::warn("BigQuery sink: reading table {} failed ({}){}", t.resource_name(),
                   Describe(live->status()),
                   r.permanent ? "" : "; retrying on the recovery schedule");
      return r;
    }
    // Reached under CREATE_NEVER too (a CDC check, a transient append failure): never create.
    if (config_.create_disposition == CreateDisposition::kCreateNever) {
      r.status = absl::Status(code, fmt::format("BigQuery table {} is missing or not readable "
                                                "and create_disposition is CREATE_NEVER ({})",
                                                t.resource_name(), live->status().message()));
      r.permanent = true;
      return r;
    }
    if (config_.cdc && config_.cdc->primary_key_columns.empty()) {
      r.status = absl::FailedPreconditionError(fmt::format(
          "BigQuery table {} is missing and cdc_table_options declares no primary key to "
          "create it with; declare primary_key_columns or create the table",
          t.resource_name()));
      r.permanent = true;
      return r;
    }
    connector::RepairResult created = create(t);
    if (!config_.cdc || !created.status.ok()) return created;
    // CDC: a table someone else created first (a 409) may have another key; read it back.
    auto again = admin_call("bigquery table read", [admin, t] { return admin->get_table(t); });
    if (!again.ok()) {
      created.status = again.status();
      created.permanent = true;
    } else if (!again->ok()) {
      created.status = again->status();
      created.permanent = !Retriable(created.status);
    } else {
      created.status = VerifyCdcTable(t.resource_name(), **again, *config_.cdc, config_.schema);
      created.permanent = !created.status.ok();
    }
    return created;
  }

  absl::Status fatal_failure(const BigQueryTableDestination& t,
                             const absl::Status& cause) const override {
    const bool never = config_.create_disposition == CreateDisposition::kCreateNever;
    if (never && (cause.code() == absl::StatusCode::kNotFound ||
                  cause.code() == absl::StatusCode::kPermissionDenied)) {
      return absl::Status(
          cause.code(),
          fmt::format("BigQuery table {} is missing or not writable and create_disposition is "
                      "CREATE_NEVER ({})",
                      t.resource_name(), cause.message()));
    }
    if (StorageErrorOf(cause) == storage_v1::StorageError::SCHEMA_MISMATCH_EXTRA_FIELDS) {
      return absl::Status(
          cause.code(),
          fmt::format("the rows for {} carry columns the table does not have ({}); add them to "
                      "the table, change the serializer's schema, or allow the sink to add them "
                      "(schema_update_options allow_new_fields)",
                      t.resource_name(), cause.message()));
    }
    return absl::Status(cause.code(), fmt::format("appending to {} failed: {}", t.resource_name(),
                                                  cause.message()));
  }

  std::unique_ptr<connector::FailedElement> failed_element(const BigQueryTableDestination& t,
                                                           std::optional<BigQueryRow> row,
                                                           absl::Status status,
                                                           bool service_rejection) const override {
    return std::make_unique<connector::BasicFailedElement>(
        "bigquery", fmt::format("{}.{}.{}", t.project, t.dataset, t.table),
        row ? std::move(row->bytes) : std::string(), std::move(status), service_rejection);
  }

  // Runs `call` (a blocking REST call with its own timeout) on a thread of its own while the
  // writer yields to its mailbox. The outer error: the subtask is being cancelled.
  absl::StatusOr<absl::StatusOr<nlohmann::json>> admin_call(
      const char* what, std::function<absl::StatusOr<nlohmann::json>()> call) {
    std::thread worker;
    auto answer = connector::AwaitOnMailbox<absl::StatusOr<nlohmann::json>>(
        mailbox_, what, [&](std::function<void(absl::StatusOr<nlohmann::json>)> done) {
          worker = std::thread(
              [call = std::move(call), done = std::move(done)]() mutable { done(call()); });
        });
    if (worker.joinable()) worker.join();
    return answer;
  }

  // Rate limits and outages are worth another attempt; a denial or a bad schema is not.
  static bool Retriable(const absl::Status& failed) {
    const std::string reason = ErrorReasonOf(failed);
    return failed.code() == absl::StatusCode::kUnavailable ||
           failed.code() == absl::StatusCode::kDeadlineExceeded ||
           failed.code() == absl::StatusCode::kInternal ||
           (failed.code() == absl::StatusCode::kResourceExhausted && reason != "quotaExceeded");
  }

  connector::RepairResult create(const BigQueryTableDestination& t) {
    connector::RepairResult r;
    nlohmann::json resource = config_.table_create_options.resource(config_.schema);
    if (config_.cdc && !config_.cdc->primary_key_columns.empty()) {
      resource["tableConstraints"] = {
          {"primaryKey", {{"columns", config_.cdc->primary_key_columns}}}};
    }
    std::shared_ptr<TableAdmin> admin = config_.admin;
    auto created = admin_call("bigquery table created", [admin, t, resource]() mutable {
      return admin->insert_table(t, std::move(resource));
    });
    if (!created.ok()) {
      r.status = created.status();
      r.permanent = true;  // the subtask is being cancelled
      return r;
    }
    // One count per table this writer asked to create, however many attempts it took.
    if (asked_.insert(t.resource_name()).second) tables_created_.inc();
    if (created->ok()) {
      r.created = true;
      spdlog::info("BigQuery sink: created table {}", t.resource_name());
      return r;
    }
    const absl::Status& failed = created->status();
    if (failed.code() == absl::StatusCode::kAlreadyExists) return r;  // lost the race: fine
    r.status = failed;
    r.permanent = !Retriable(failed);
    if (failed.code() == absl::StatusCode::kPermissionDenied) {
      r.status = absl::PermissionDeniedError(fmt::format(
          "creating {} was denied (the credentials need bigquery.tables.create on the dataset, "
          "or set create_disposition CREATE_NEVER and create it): {}",
          t.resource_name(), failed.message()));
    }
    return r;
  }

  // Widens an existing table's schema to the rows' (SchemaUpdateOptions), guarded by its etag;
  // with nothing to change the rows are simply resent (a table still propagating).
  connector::RepairResult reconcile(const BigQueryTableDestination& t, const nlohmann::json& live) {
    connector::RepairResult r;
    if (!config_.schema_updates.any()) return r;
    absl::StatusOr<TableSchema> current =
        live.contains("schema") && live["schema"].contains("fields")
            ? TableSchemaFromJson(live["schema"]["fields"])
            : absl::StatusOr<TableSchema>(TableSchema{});
    absl::StatusOr<std::optional<TableSchema>> wanted =
        current.ok() ? ReconcileSchema(*current, config_.schema, config_.schema_updates)
                     : absl::StatusOr<std::optional<TableSchema>>(current.status());
    if (!wanted.ok()) {
      r.status = absl::Status(wanted.status().code(),
                              fmt::format("the schema of {} cannot take the rows: {}",
                                          t.resource_name(), wanted.status().message()));
      r.permanent = true;
      return r;
    }
    if (!wanted->has_value()) return r;
    nlohmann::json patch = {{"schema", {{"fields", TableSchemaToJson(**wanted)}}}};
    const std::string etag = live.value("etag", "");
    std::shared_ptr<TableAdmin> admin = config_.admin;
    auto patched = admin_call("bigquery table schema updated", [admin, t, patch, etag] {
      return admin->patch_table(t, patch, etag);
    });
    if (!patched.ok()) {
      r.status = patched.status();
      r.permanent = true;
      return r;
    }
    if (patched->ok()) {
      schema_updates_.inc();
      spdlog::info("BigQuery sink: updated the schema of {} to take the rows' columns",
                   t.resource_name());
      return r;
    }
    r.status = patched->status();
    // A stale etag means another writer changed the table: read it again and retry.
    r.permanent =
        !(Retriable(r.status) || r.status.code() == absl::StatusCode::kFailedPrecondition);
    if (r.status.code() == absl::StatusCode::kPermissionDenied) {
      r.status = absl::PermissionDeniedError(fmt::format(
          "updating the schema of {} was denied (the credentials need bigquery.tables.update): {}",
          t.resource_name(), r.status.message()));
    }
    return r;
  }

 private:
  BigQueryWriterConfig config_;
  MailboxExecutor& mailbox_;
  Counter& tables_created_;
  Counter& append_retries_;
  Counter& schema_updates_;
  Counter& files_staged_;
  std::shared_ptr<util::TimerThread> timers_;
  std::set<std::string> asked_;
};

connector::AsyncSinkWriterSettings Settings(const BigQueryWriterOptions& o) {
  connector::AsyncSinkWriterSettings s;
  s.words = {.connector = "BigQuery",
             .metric_connector = "bigquery",
             .element = "row",
             .elements = "rows",
             .element_metric = "Rows",
             .destination = "table",
             .client = "stream writer",
             .live_destinations = "tables",
             .request = "AppendRows"};
  s.max_in_flight_count = o.max_in_flight_rows;
  s.max_in_flight_bytes = o.max_in_flight_bytes;
  s.progress.connector = "BigQuery";
  s.progress.completion = "append";
  s.progress.stall_warning_interval = o.stall_warning_interval;
  s.recovery = o.recovery;
  s.max_consecutive_rejections = o.max_consecutive_rejections;
  s.destination_idle_timeout = o.destination_idle_timeout;
  s.flush_interval = o.flush_interval;
  s.shutdown_timeout = o.shutdown_timeout;
  s.per_destination_metrics = o.per_destination_metrics;
  s.abandoned_counter = kAbandonedCounter;
  return s;
}

}  // namespace

std::unique_ptr<BigQueryWriterCore> MakeBigQueryWriterCore(BigQueryWriterConfig config,
                                                           WriterInitContext& context) {
  connector::AsyncSinkWriterSettings settings = Settings(config.options);
  // A staged row is refused for its own value only (the Avro encoder's verdict): routed at once,
  // without an isolation pass that would finish every open staging file to resend it alone.
  if (config.staging) settings.one_element_per_request = true;
  std::shared_ptr<connector::FailureHandler> handler = config.failure_handler;
  return std::make_unique<BigQueryWriterCore>(
      std::move(settings), std::make_unique<BigQuerySinkAdapter>(std::move(config), context),
      std::move(handler), context);
}

}  // namespace gcpstream::bigquery
