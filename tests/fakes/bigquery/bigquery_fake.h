#ifndef GCPSTREAM_TESTS_FAKES_BIGQUERY_BIGQUERY_FAKE_H_
#define GCPSTREAM_TESTS_FAKES_BIGQUERY_BIGQUERY_FAKE_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/fakes/bigquery/fake_jobs.h"
#include "tests/fakes/bigquery/fake_store.h"
#include "tests/fakes/gcs/fake_gcs.h"

namespace httplib {
class Server;
}

namespace gcpstream::testing {

using bigquery_fake::FakeOptions;

// A fake BigQuery for tests and for trying the BigQuery sink by hand (bigquery_fake_main.cc):
// no BigQuery emulator can be installed here, so this follows the public API references.
//  - gRPC google.cloud.bigquery.storage.v1.BigQueryWrite (fake_write_service.h):
//    CreateWriteStream (COMMITTED, PENDING, BUFFERED), the implicit `_default` stream,
//    AppendRows with explicit offsets (the end appends; below it ALREADY_EXISTS, beyond it
//    OUT_OF_RANGE, each with its StorageError; refused on `_default`), per-row errors with
//    their indexes (the request is refused whole), requests over 10 MB refused, extra writer
//    fields refused with SCHEMA_MISMATCH_EXTRA_FIELDS, `updated_schema` after a table schema
//    change; FlushRows (rows up to and including the offset become visible, repeating a
//    flushed offset succeeds, beyond the end OUT_OF_RANGE, a finalized stream refuses);
//    FinalizeWriteStream (a finalized stream refuses appends and flushes);
//    BatchCommitWriteStreams (PENDING, finalized streams; atomic); GetWriteStream (FULL view
//    carries the table schema); a missing or still-propagating table answers the masked
//    PERMISSION_DENIED the service gives; streams unused for `stream_idle_expiry` are gone.
//  - REST BigQuery v2 (fake_rest_service.h): datasets.insert/get, tables.insert/get/patch/
//    update (schema widening rules, etag preconditions, partitioning and clustering checks),
//    tabledata.list for reading visible rows back, and /fake/v1 controls.
//  - Faults (FakeOptions): UNAVAILABLE on the Nth append or flush, a lost append response,
//    a stalled append.
//  - gRPC google.cloud.bigquery.storage.v1.BigQueryRead (fake_read_service.h): read sessions
//    over a snapshot (time travel within 7 days), selected fields, simple row restrictions,
//    stream counts, Avro rows from an offset, session expiry, SplitReadStream; REST
//    tabledata.insertAll to fill a table.
//  - The Cloud Storage JSON API subset of tests/fakes/gcs/fake_gcs.h on the REST port, so one
//    endpoint serves both (point a Cloud Storage client at rest_endpoint()).
//  - Change data capture on the default stream (fake_cdc.h): upserts and deletes by primary key
//    in _CHANGE_SEQUENCE_NUMBER order; REST tables.delete.
//  - REST jobs (fake_jobs.h): insert with the caller's job id (a duplicate answers 409), get,
//    load jobs from gs:// Avro containers in the fake's Cloud Storage, copy jobs, and query
//    jobs of the simple SELECT shapes a source issues (fake_query.h; views expanded).
// Each behaviour is pinned by tests/integration/bigquery/bigquery_fake_test.cc,
// bigquery_read_fake_test.cc, bigquery_jobs_fake_test.cc and bigquery_query_jobs_fake_test.cc.
// Not served: SQL beyond those shapes, a query result cache, Arrow rows,
// connection multiplexing (one stream per AppendRows connection), default values for missing
// columns. Thread-safe.
class BigQueryFake {
 public:
  // Listens on `host` (0: any free port for either).
  static absl::StatusOr<std::unique_ptr<BigQueryFake>> Start(FakeOptions options = {},
                                                             int grpc_port = 0, int rest_port = 0,
                                                             const std::string& host = "127.0.0.1");
  ~BigQueryFake();

  std::string grpc_endpoint() const;  // host:port
  std::string rest_endpoint() const;  // http://host:port

  void set_options(FakeOptions options);
  void advance_clock(absl::Duration d);

  // Shortcuts to the REST calls, for tests: a dataset; a table from a REST `tables` resource
  // (`schema.fields` etc.).
  // `location` empty: US.
  absl::Status add_dataset(const std::string& project, const std::string& dataset,
                           const std::string& location = "");
  absl::Status add_table(const std::string& project, const std::string& dataset,
                         const nlohmann::json& table_resource);
  absl::StatusOr<nlohmann::json> table(const std::string& project, const std::string& dataset,
                                       const std::string& table) const;
  absl::Status patch_table(const std::string& project, const std::string& dataset,
                           const std::string& table, const nlohmann::json& patch);
  absl::Status delete_table(const std::string& project, const std::string& dataset,
                            const std::string& table);
  // The visible rows of "projects/P/datasets/D/tables/T" (RowDecoder's JSON shape).
  absl::StatusOr<std::vector<nlohmann::json>> rows(const std::string& table_path) const;
  // Rows made visible at once (RowDecoder's JSON shape; not checked), as tabledata.insertAll
  // would: how a test fills a table the source reads.
  absl::Status insert_rows(const std::string& table_path, std::vector<nlohmann::json> rows);
  // Cloud Storage: a bucket to upload to, and the objects (tests read staged files here).
  void add_bucket(const std::string& bucket);
  gcs_fake::FakeObjectStore& gcs() { return *gcs_; }
  bigquery_fake::FakeJobs& jobs() { return *jobs_; }
  std::int64_t streams_created() const;
  std::int64_t rows_appended() const;  // FakeStore::rows_appended

  void shutdown();

 private:
  BigQueryFake() = default;
  std::shared_ptr<bigquery_fake::FakeStore> store_;
  std::shared_ptr<gcs_fake::FakeObjectStore> gcs_;
  std::shared_ptr<bigquery_fake::FakeJobs> jobs_;
  std::unique_ptr<grpc::Service> write_service_;
  std::unique_ptr<grpc::Service> read_service_;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::unique_ptr<httplib::Server> rest_server_;
  std::thread rest_thread_;
  std::string grpc_endpoint_;
  std::string rest_endpoint_;
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_FAKES_BIGQUERY_BIGQUERY_FAKE_H_
