#ifndef GCPSTREAM_BIGQUERY_SINK_LOAD_JOB_COMMITTER_H_
#define GCPSTREAM_BIGQUERY_SINK_LOAD_JOB_COMMITTER_H_

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gcpstream/api/metrics.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/bigquery/admin/table_admin.h"
#include "gcpstream/bigquery/schema/table_schema.h"
#include "gcpstream/bigquery/sink/bigquery_writer_options.h"
#include "gcpstream/bigquery/sink/staged_files.h"
#include "gcpstream/connector/recovery_backoff.h"
#include "gcpstream/gcs/storage_client.h"

namespace gcpstream::bigquery {

// How the FILE_LOADS committer runs its load jobs.
struct LoadJobCommitterConfig {
  std::shared_ptr<TableAdmin> admin;
  // Deletes staged objects after their load succeeded (best effort). Null: files are kept.
  std::shared_ptr<gcs::StorageClient> storage;
  // The project the jobs run in; empty: each destination table's project.
  std::string job_project;
  // "WRITE_APPEND" (the default; the only one streaming allows), "WRITE_TRUNCATE" or
  // "WRITE_EMPTY" (BigQuery's writeDisposition).
  std::string write_disposition = "WRITE_APPEND";
  CreateDisposition create_disposition = CreateDisposition::kCreateIfNeeded;
  // What a missing table is created with (the serializer's schema), and how.
  TableSchema schema;
  TableCreateOptions table_create_options;
  // Polling a submitted job (loadJobPollInitialBackoff 1 s, loadJobPollMaxBackoff 30 s,
  // ±25 % jitter, no attempt cap: a load may run for hours).
  std::chrono::milliseconds poll_initial_backoff{1000};
  std::chrono::milliseconds poll_max_backoff{30000};
  // Retrying jobs.insert, jobs.get and tables.get / insert through transient failures
  // (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, RESOURCE_EXHAUSTED, ABORTED) and a table still
  // propagating after its creation: the recovery schedule (500 ms doubling to 10 s, 10
  // attempts).
  connector::RecoveryOptions recovery;
};

// The FILE_LOADS committer (../shared/spec/bigquery.md, "File loads"): after a checkpoint
// completed, its committables (StagedFiles) become load jobs through PlanLoads, one per
// committable, run in checkpoint order, each to completion before the next:
//  - before a table's first load in this committer's life it is reconciled: tables.get; a
//    missing table is created with `schema` under CREATE_IF_NEEDED (409 counts as created;
//    reading it back waits on the recovery schedule) and fails the commit under CREATE_NEVER.
//    The load then carries the live table's schema (with WRITE_TRUNCATE: `schema`, which
//    replaces the table's) with useAvroLogicalTypes, and the jobs calls carry the table's
//    location.
//    Widening the live schema with the serializer's (schemaUpdateOptions) is not built: a
//    staged column the table lacks is ignored by the load, as BigQuery does;
//  - jobs.insert with the plan's deterministic job id (LoadJobId). A 409 means an earlier
//    attempt created that job: it counts only after jobs.get shows a load of exactly the same
//    sorted source URIs into the same table; anything else is a collision and fails the
//    commit (INTERNAL) rather than skip a load that never happened;
//  - jobs.get until DONE, backing off poll_initial_backoff doubling to poll_max_backoff;
//    DONE with an errorResult fails the commit (the load is all or nothing; the staged files
//    stay for the restart, which re-attaches to the same failed job and fails again: such
//    committables can only be dropped by starting without state);
//  - after a load succeeded its staged objects are deleted, best effort (a failure is logged).
// Failures are signalled on the committables of the failed load and every later one (order
// is kept); the job fails and a restart commits the restored committables again, re-attaching
// by id. Runs on the subtask thread and blocks it. Metrics: loadJobsSubmitted (jobs.insert
// calls that created a job), loadJobsAttached (409s confirmed), loadJobPolls, tablesCreated.
// Not thread-safe (one subtask thread).
class LoadJobCommitter final : public Committer<StagedFiles> {
 public:
  LoadJobCommitter(LoadJobCommitterConfig config, MetricGroup& metrics);

  absl::Status commit(std::vector<CommitRequest<StagedFiles>>& requests) override;

  // The load job configuration sent for `load` ({"load": {...}}); public for tests.
  nlohmann::json load_configuration(const PlannedLoad& load, const TableSchema& schema) const;

 private:
  // OK once `load` is DONE without error (submitted now or by an earlier attempt).
  absl::Status run(const PlannedLoad& load);
  // What a table's loads need, learned once per table: the schema they carry and the table's
  // location (jobs outside the US and EU multi-regions are found only with it).
  struct Reconciled {
    TableSchema schema;
    std::string location;
  };
  absl::StatusOr<Reconciled> reconcile(const TableRef& table);
  absl::StatusOr<nlohmann::json> submit(const std::string& project, const PlannedLoad& load,
                                        const nlohmann::json& configuration,
                                        const std::string& location);
  absl::StatusOr<nlohmann::json> await_done(const std::string& project, const PlannedLoad& load,
                                            nlohmann::json job);
  void clean_up(const PlannedLoad& load);

  LoadJobCommitterConfig config_;
  std::map<std::string, Reconciled> reconciled_;  // by table resource name
  Counter& submitted_;
  Counter& attached_;
  Counter& polls_;
  Counter& tables_created_;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_LOAD_JOB_COMMITTER_H_
