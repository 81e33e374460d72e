#ifndef GCPSTREAM_BIGQUERY_SINK_BIGQUERY_SINK_ADAPTER_H_
#define GCPSTREAM_BIGQUERY_SINK_BIGQUERY_SINK_ADAPTER_H_

#include <memory>

#include "gcpstream/api/sink.h"
#include "gcpstream/bigquery/admin/table_admin.h"
#include "gcpstream/bigquery/client/write_stub.h"
#include "gcpstream/bigquery/schema/schema_reconciliation.h"
#include "gcpstream/bigquery/schema/table_schema.h"
#include "gcpstream/bigquery/sink/bigquery_serialization_schema.h"
#include "gcpstream/bigquery/sink/bigquery_writer_options.h"
#include "gcpstream/bigquery/sink/buffered_stream_ledger.h"
#include "gcpstream/bigquery/sink/cdc.h"
#include "gcpstream/bigquery/sink/staged_files_ledger.h"
#include "gcpstream/bigquery/sink/staging_file_client.h"
#include "gcpstream/connector/async_sink_writer.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/failure_handler.h"

namespace gcpstream::bigquery {

struct BigQueryWriterConfig {
  BigQueryWriterOptions options;
  CreateDisposition create_disposition = CreateDisposition::kCreateIfNeeded;
  TableCreateOptions table_create_options;
  // The schema rows are encoded for, and a created table gets.
  TableSchema schema;
  google::protobuf::DescriptorProto writer_descriptor;
  std::shared_ptr<connector::FailureHandler> failure_handler;
  std::shared_ptr<BigQueryWriteStub> stub;
  std::shared_ptr<TableAdmin> admin;
  // May the writer widen an existing table (new columns, relaxed REQUIRED) to take the rows?
  SchemaUpdateOptions schema_updates;
  // Set for STORAGE_API_EXACTLY_ONCE: each table gets a BufferedStreamClient recording its
  // stream position here (and is kept until that position is committed). Unset: the default
  // stream (STORAGE_API_AT_LEAST_ONCE).
  std::shared_ptr<BufferedStreamLedger> ledger;
  // Set for CDC writes (at least once only): each table is checked against the contract when
  // its writer opens (VerifyCdcTable), and a missing table is created with this primary key.
  std::optional<CdcTableOptions> cdc;
  // Set for FILE_LOADS: each table gets a StagingFileClient writing Avro staging files through
  // `storage` (options.table_id is filled in per table) and recording finished files in
  // `ledger`; nothing reaches the Storage Write API, and the table is the committer's to
  // reconcile.
  struct Staging {
    std::shared_ptr<gcs::StorageClient> storage;
    std::shared_ptr<StagedFilesLedger> ledger;
    StagingFileOptions options;
  };
  std::optional<Staging> staging;
};

// The BigQuery writers: the shared asynchronous core over one client per table, a
// DefaultStreamClient (STORAGE_API_AT_LEAST_ONCE), a BufferedStreamClient
// (STORAGE_API_EXACTLY_ONCE, with `ledger`) or a StagingFileClient (FILE_LOADS, with
// `staging`: a row the Avro encoder refuses fails alone, a failed upload fails the job). What
// is BigQuery's own on the Storage Write API paths:
//  - a missing table answers NOT_FOUND or, masked, PERMISSION_DENIED (measured: the service
//    will not confirm a table to a caller who cannot see it); under CREATE_IF_NEEDED both are
//    repaired by creating the table (HTTP 409 counts as created) and resending, within the
//    recovery budget; a rate-limited creation (429, 403 rateLimitExceeded) spends an attempt of
//    it; under CREATE_NEVER both fail the job;
//  - a table without the rows' columns (SCHEMA_MISMATCH_EXTRA_FIELDS) is widened under
//    schema_updates (tables.get, ReconcileSchema, tables.patch with the etag; metric
//    schemaUpdates), then the rows are resent on a new connection; without it the job fails;
//  - rows named in row_errors are record-level (confirmed alone, then routed); the other rows
//    of their request are resent; a writer schema the table cannot take
//    (SCHEMA_MISMATCH_EXTRA_FIELDS) and any other INVALID_ARGUMENT without row detail fail the
//    job: they are about the schema, not a row;
//  - transient failures are retried by the client (BigQueryWriterOptions' retry_*) and fail
//    the job when those are spent; they never reach a failure handler;
//  - CDC (config.cdc): before a table's first row the table is repaired as below, on the
//    recovery schedule: read, it must declare a primary key matching cdc_table_options
//    (VerifyCdcTable), and a missing one is created with that key under CREATE_IF_NEEDED (the
//    key must then be declared); a permanent failure, or the schedule spent, fails the job;
//  - a repair never creates a table under CREATE_NEVER;
//  - exactly-once: a failure of the stream itself (kStreamFailurePayload) fails the job, and a
//    table is released (idle, capacity) only once its position is named by a committable;
//  - metrics tablesCreated, appendRetries, and the core's (inFlightRows, parkedRows, ...).
using BigQueryWriterCore =
    connector::AsyncSinkWriter<connector::BigQueryTableDestination, BigQueryRow>;

std::unique_ptr<BigQueryWriterCore> MakeBigQueryWriterCore(BigQueryWriterConfig config,
                                                           WriterInitContext& context);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_BIGQUERY_SINK_ADAPTER_H_
