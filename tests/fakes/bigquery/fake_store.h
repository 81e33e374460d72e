#ifndef GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_STORE_H_
#define GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_STORE_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/cloud/bigquery/storage/v1/storage.pb.h"
#include "tests/fakes/bigquery/fake_cdc.h"
#include "tests/fakes/bigquery/fake_table_schema.h"

namespace gcpstream::testing::bigquery_fake {

// How the fake behaves beyond the documented API: its clock, its timings and the faults it
// injects. Changeable while it runs (BigQueryFake::set_options, or POST /fake/v1/options).
struct FakeOptions {
  // The AppendRows request with this ordinal (1-based, counted over every connection since the
  // options were set) ends its connection with UNAVAILABLE without being applied [0: never].
  int unavailable_on_append = 0;
  // The AppendRows request with this ordinal is applied, then its connection ends with
  // UNAVAILABLE: the rows landed but the client never hears so [0: never].
  int lose_response_on_append = 0;
  // The AppendRows request with this ordinal waits `stall` before it is processed, unless its
  // connection is cancelled first [0: never].
  int stall_on_append = 0;
  std::chrono::milliseconds stall{0};
  // Every AppendRows request waits this long before it is processed (a slower service, so a
  // test's kill lands while appends are in flight) [0].
  std::chrono::milliseconds append_latency{0};
  // A run of quota refusals: the AppendRows requests with ordinals in [resource_exhausted_from,
  // resource_exhausted_from + resource_exhausted_count) end their connection with
  // RESOURCE_EXHAUSTED without being applied, as the service answers a request over the
  // project's AppendRows throughput quota (the write-API quota page) [0: never].
  int resource_exhausted_from = 0;
  int resource_exhausted_count = 0;
  // A FlushRows with this ordinal (1-based) answers UNAVAILABLE without flushing [0: never].
  int unavailable_on_flush = 0;
  // An application-created stream unused this long is gone: every call naming it answers
  // NOT_FOUND (STREAM_NOT_FOUND). The write-stream docs give buffered streams a 7-day TTL
  // without traffic; what the service answers after it is not documented (docs/bigquery.md).
  absl::Duration stream_idle_expiry = absl::Hours(24 * 7);
  // For this long after a table is created, CreateWriteStream, default-stream appends and
  // FlushRows on it answer the masked PERMISSION_DENIED a table still propagating gets from the
  // service (measured, ../shared/spec/bigquery.md "A missing table does not say NOT_FOUND").
  absl::Duration table_propagation = absl::ZeroDuration();
  // Storage Read API. A read session splits its rows into streams of at most this many rows
  // (so a small table is one stream), before max_stream_count / preferred_min_stream_count
  // shape the count [10,000].
  int read_rows_per_stream = 10000;
  // Rows per ReadRows response block [1,000].
  int read_rows_per_response = 1000;
  // Fault: each ReadRows call ends with `read_fail_code` (a gRPC code; UNAVAILABLE by default)
  // and `read_fail_message` once it has sent this many rows, for the next `read_fail_count`
  // calls that get that far [0: never].
  int read_fail_after_rows = 0;
  int read_fail_count = 0;
  int read_fail_code = 14;
  std::string read_fail_message = "the connection was reset (injected)";
  // A read session expires this long after its creation (the service: 6 hours) [6 h].
  absl::Duration read_session_lifetime = absl::Hours(6);
  // The fake's notion of now [absl::Now() plus what advance_clock added].
  std::function<absl::Time()> clock;
};

// The fake's tables, datasets and write streams, and every Storage Write API rule that is about
// them rather than about a connection. Thread-safe (one lock).
class FakeStore {
 public:
  using WriteStream = google::cloud::bigquery::storage::v1::WriteStream;

  FakeStore();
  void set_options(FakeOptions options);
  FakeOptions options() const;
  void advance_clock(absl::Duration d);
  absl::Time now() const;

  // --- REST resources (JSON as the BigQuery v2 API shows them). NOT_FOUND, ALREADY_EXISTS,
  // INVALID_ARGUMENT and FAILED_PRECONDITION (an etag mismatch) map to 404, 409, 400 and 412.
  absl::StatusOr<nlohmann::json> insert_dataset(const std::string& project,
                                                const nlohmann::json& resource);
  absl::StatusOr<nlohmann::json> get_dataset(const std::string& project,
                                             const std::string& dataset) const;
  absl::StatusOr<nlohmann::json> insert_table(const std::string& project,
                                              const std::string& dataset,
                                              const nlohmann::json& resource);
  absl::StatusOr<nlohmann::json> get_table(const std::string& project, const std::string& dataset,
                                           const std::string& table) const;
  // tables.patch (`replace` false: only the fields present change) and tables.update (`replace`
  // true). `if_match`, when not empty, must equal the table's etag.
  absl::StatusOr<nlohmann::json> update_table(const std::string& project,
                                              const std::string& dataset, const std::string& table,
                                              const nlohmann::json& resource, bool replace,
                                              const std::string& if_match);
  // tables.delete: the table and its rows are gone (NOT_FOUND when there is none).
  absl::Status delete_table(const std::string& project, const std::string& dataset,
                            const std::string& table);
  // The visible rows, each a JSON object keyed by column name (see RowDecoder for the values).
  absl::StatusOr<std::vector<nlohmann::json>> rows(const std::string& table_path) const;

  // --- Storage Write API. Failures carry the gRPC code the service documents and, where it
  // documents one, a google.rpc.Status detail holding a StorageError.
  grpc::Status create_write_stream(const std::string& parent, WriteStream::Type type,
                                   WriteStream* out);
  // The table a stream writes to, with its schema and schema version (bumped by every schema
  // change). `default_stream` tells whether the name is the table's `_default` stream.
  grpc::Status stream_table(const std::string& stream, std::string* table_path, Schema* schema,
                            std::int64_t* schema_version, bool* default_stream);
  // Appends decoded rows. `offset` is the caller's explicit offset, if any; `first_row` is where
  // they landed (the stream's previous end).
  grpc::Status append(const std::string& stream, std::optional<std::int64_t> offset,
                      std::vector<nlohmann::json> rows, std::int64_t* first_row);
  grpc::Status get_write_stream(const std::string& name, bool full, WriteStream* out);
  grpc::Status finalize_write_stream(const std::string& name, std::int64_t* row_count);
  grpc::Status flush_rows(const std::string& name, std::optional<std::int64_t> offset,
                          std::int64_t* flushed);
  grpc::Status batch_commit(
      const google::cloud::bigquery::storage::v1::BatchCommitWriteStreamsRequest& request,
      google::cloud::bigquery::storage::v1::BatchCommitWriteStreamsResponse* out);

  // --- Storage Read API support. The visible rows of a table as of `at` (now when unset),
  // with its schema: NOT_FOUND for a missing table; INVALID_ARGUMENT for a view (the service's
  // words: non-table entities cannot be read with the storage API), for an instant older than
  // the 7-day time-travel window (the service's "exceeds the maximum time travel duration of
  // 168h"), in the future, or before the table existed.
  absl::Status snapshot(const std::string& table_path, std::optional<absl::Time> at, Schema* schema,
                        std::vector<nlohmann::json>* rows) const;
  // Tests and the fake binary: rows (RowDecoder's JSON shape, not checked) made visible now.
  absl::Status insert_rows(const std::string& table_path, std::vector<nlohmann::json> rows);
  // A load job landing (fake_jobs.h), all under one lock: "WRITE_EMPTY" refuses a table that
  // has rows (FAILED_PRECONDITION), "WRITE_TRUNCATE" drops every row and, with
  // `replace_schema`, replaces the schema (a new schema version); then all rows are visible at
  // once. NOT_FOUND for a missing table.
  absl::Status load_rows(const std::string& table_path, std::vector<nlohmann::json> rows,
                         const std::string& write_disposition, const Schema* replace_schema);

  // Whether the next ReadRows that reaches read_fail_after_rows fails (read_fail_count of them
  // after each set_options).
  bool take_read_failure();

  // Counters for tests.
  std::int64_t next_append_ordinal();
  std::int64_t next_flush_ordinal();
  std::int64_t streams_created() const;
  // Rows every append accepted (default and application-created streams), visible or not.
  std::int64_t rows_appended() const;

 private:
  struct Table {
    nlohmann::json resource;  // everything but schema, etag and the output-only counters
    Schema schema;
    std::int64_t schema_version = 1;
    std::int64_t etag = 1;
    absl::Time created;
    std::vector<nlohmann::json> rows;   // visible
    std::vector<absl::Time> row_times;  // when each row became visible (time travel)
    CdcLedger cdc;                      // CDC: the last applied sequence per key
  };
  struct Stream {
    std::string table;
    WriteStream::Type type = WriteStream::COMMITTED;
    std::vector<nlohmann::json> rows;  // appended
    std::int64_t flushed = 0;          // BUFFERED: rows [0, flushed) are visible
    bool finalized = false;
    bool committed = false;
    absl::Time created;
    absl::Time last_used;
    absl::Time commit_time;
  };

  nlohmann::json table_json(const std::string& path, const Table& t) const;
  // Appends a visible row, stamped now. Caller holds mu_.
  void make_visible(Table& table, nlohmann::json row);
  // The stream, or NOT_FOUND (expired streams are dropped here). Caller holds mu_.
  grpc::Status find_stream(const std::string& name, Stream** out);
  bool propagating(const Table& t) const;
  absl::Time now_locked() const;

  mutable std::mutex mu_;
  FakeOptions options_;
  absl::Duration clock_offset_;
  std::map<std::string, nlohmann::json> datasets_;  // "projects/P/datasets/D"
  std::map<std::string, Table> tables_;             // "projects/P/datasets/D/tables/T"
  std::map<std::string, Stream> streams_;
  std::int64_t schema_versions_ = 0;  // the last schema version handed out, store-wide
  std::int64_t append_ordinal_ = 0;
  std::int64_t flush_ordinal_ = 0;
  int read_failures_taken_ = 0;
  std::int64_t streams_created_ = 0;
  std::int64_t rows_appended_ = 0;
};

// "projects/P/datasets/D/tables/T" of a stream or table name; empty when it is neither.
std::string TablePathOf(const std::string& name);
// A Storage Write API error: `code`, `message`, and a StorageError detail when `storage_code`
// is not STORAGE_ERROR_CODE_UNSPECIFIED.
grpc::Status WriteError(
    grpc::StatusCode code,
    google::cloud::bigquery::storage::v1::StorageError::StorageErrorCode storage_code,
    const std::string& entity, const std::string& message);

}  // namespace gcpstream::testing::bigquery_fake

#endif  // GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_STORE_H_
