#ifndef GCPSTREAM_PIPELINE_PIPELINE_SPEC_H_
#define GCPSTREAM_PIPELINE_PIPELINE_SPEC_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "gcpstream/bigquery/schema/schema_reconciliation.h"
#include "gcpstream/bigquery/schema/table_schema.h"
#include "gcpstream/bigquery/sink/bigquery_writer_options.h"
#include "gcpstream/bigquery/sink/file_loads_options.h"
#include "gcpstream/bigtable/admin/table_create_options.h"
#include "gcpstream/bigtable/changestream/change_stream_options.h"
#include "gcpstream/bigtable/sink/bigtable_writer_options.h"
#include "gcpstream/bigtable/staged/staged_envelope.h"
#include "gcpstream/pipeline/pubsub_source_spec.h"
#include "gcpstream/pipeline/yaml_fields.h"
#include "gcpstream/pubsub/admin/topic_admin.h"
#include "gcpstream/pubsub/sink/pubsub_publisher_options.h"
#include "gcpstream/runtime/checkpoint_config.h"
#include "gcpstream/spanner/changestream/change_stream_options.h"
#include "gcpstream/spanner/sink/spanner_writer_options.h"
#include "gcpstream/spanner/source/spanner_read_operation.h"
#include "gcpstream/tasks/sink/cloud_tasks_writer_options.h"

// The parsed form of a pipeline file (see docs/cli.md for the YAML reference). Plain value
// types: parsing fills them, the job assembly reads them. Defaults here are the YAML defaults.
namespace gcpstream::pipeline {

// `source: {type: file}`: a bounded JSON-lines or JSON-array file.
struct FileSourceSpec {
  enum class Format { kAuto, kJsonLines, kJsonArray };
  std::string path;
  // kAuto: a file whose first non-blank character is '[' is an array, else JSON lines.
  Format format = Format::kAuto;
  // Target size of one split (byte range); boundaries move forward to the next record [4 MiB].
  std::int64_t split_bytes = 4 * 1024 * 1024;
};

// `source: {type: spanner}`: a bounded read of a Spanner database at one snapshot (a query, or
// a table read optionally through an index). Each row becomes a record whose fields are the
// columns (see SpannerRowToJson).
struct SpannerSourceSpec {
  std::string project;
  std::string instance;
  std::string database;
  std::optional<std::string> query;
  std::optional<std::string> table;
  std::optional<std::string> index;
  std::vector<std::string> columns;
  spanner::SpannerSourceOptions options;
  std::optional<std::string> emulator_endpoint;
  std::optional<std::string> service_account_key_file;
};

// `source: {type: spanner_change_stream}`: one record per row modification.
struct SpannerChangeStreamSourceSpec {
  std::string project;
  std::string instance;
  std::string database;
  std::string change_stream;
  spanner::SpannerChangeStreamOptions options;
  std::optional<std::string> emulator_endpoint;
  std::optional<std::string> service_account_key_file;
};

// `source: {type: bigtable_change_stream}`: one record per row mutation.
struct BigtableChangeStreamSourceSpec {
  std::string project;
  std::string instance;
  std::string table;
  std::string app_profile_id;
  bigtable::BigtableChangeStreamOptions options;
  std::optional<std::string> emulator_endpoint;
  std::optional<std::string> service_account_key_file;
};

// `source: {type: bigtable}`: a bounded scan of a Bigtable table. Each row becomes a record:
// `_row_key`, and the newest value of every column read (see BigtableRowToPipelineRecord).
struct BigtableSourceSpec {
  std::string project;
  std::string instance;
  std::string table;
  std::optional<std::string> app_profile_id;
  // [start, end) pairs; an empty bound is open.
  std::vector<std::pair<std::string, std::string>> row_ranges;
  std::vector<std::string> prefixes;
  std::vector<std::string> row_keys;
  // Only this family is read, and its qualifiers name the fields; unset: every family, the
  // fields named "family:qualifier".
  std::optional<std::string> family;
  int max_rows_per_fetch = 1000;
  std::int64_t max_bytes_per_fetch = 8 << 20;
  std::optional<std::string> emulator_endpoint;
  std::optional<std::string> service_account_key_file;
};

// `source: {type: bigquery}`: a table read once through the Storage Read API (BigQuerySource).
struct BigQuerySourceSpec {
  std::string project;  // the table's; with `query`, the project the job runs and is billed in
  std::string dataset;  // empty with `query`
  std::string table;    // empty with `query`
  // The query route: the query, its job's location and result dataset, the reuse window (0:
  // off) and the pipeline's name the reusable job id is derived from (set from `name:`).
  std::string query;
  // The table route: a view named by `table` is read through a query job (the query_* keys
  // below apply to it).
  bool materialize_views = false;
  std::string query_location;
  std::string query_result_dataset;
  std::chrono::milliseconds reuse_query_result_within{0};
  std::string job_name;
  std::optional<std::string> emulator_rest_endpoint;
  std::optional<std::string> parent_project;
  std::vector<std::string> selected_fields;
  std::string row_restriction;
  std::optional<std::int64_t> snapshot_time_us;  // RFC 3339 in the file, to the microsecond
  int max_stream_count = 0;
  int preferred_min_stream_count = 0;
  int max_records_per_fetch = 10000;
  int retry_max_attempts = 25;
  std::optional<std::string> emulator_endpoint;
  std::optional<std::string> service_account_key_file;
};

using SourceSpec =
    std::variant<FileSourceSpec, PubSubSourceSpec, SpannerSourceSpec, SpannerChangeStreamSourceSpec,
                 BigtableChangeStreamSourceSpec, BigtableSourceSpec, BigQuerySourceSpec>;

// One field comparison of a keep/drop filter.
struct FieldComparison {
  enum class Op { kEq, kNe, kLt, kLe, kGt, kGe, kExists, kNotExists };
  std::string field;
  Op op = Op::kEq;
  // Scalar operand (unused by exists / not_exists). Numbers compare numerically with number
  // fields; everything else compares as text.
  nlohmann::json value;
};

// Where the record's ordinal goes (`transform.ordinal`).
struct OrdinalSpec {
  std::optional<std::string> attribute;  // as a string attribute
  std::optional<std::string> field;      // as a number field
  std::int64_t start = 0;                // the first record's ordinal
};

// How a cell timestamp is read from a field.
struct TimestampSpec {
  enum class Unit { kSeconds, kMillis, kMicros };
  std::string field;
  // A strftime-style format for text values ("%Y/%m/%d %H:%M"); unset: a number in `unit`.
  std::optional<std::string> format;
  Unit unit = Unit::kMillis;
  // Offset of the format's local time from UTC, e.g. "+02:00" [UTC].
  std::chrono::minutes utc_offset{0};
};

// `transform.to_bigtable`: one row per record.
struct BigtableMappingSpec {
  std::string row_key;  // template, e.g. "{origin}#{date}#{seq}"
  std::string family;
  // qualifier -> template of the value (a bare field name is written "{field}")
  std::vector<std::pair<std::string, std::string>> columns;
  // qualifier -> template of an integer added to the aggregate cell (AddToCell on an INT64
  // family), at the mapping's timestamp or, without one, at timestamp 0 (one cell per column).
  std::vector<std::pair<std::string, std::string>> add_to_cell;
  // sink mode READ_MODIFY_WRITE: qualifier -> template of a signed 64-bit amount added to the
  // cell's 8-byte counter / of the text appended to the cell.
  std::vector<std::pair<std::string, std::string>> increment;
  std::vector<std::pair<std::string, std::string>> append;
  // sink mode CONDITIONAL: the predicate, evaluated on the row atomically with its branch; the
  // columns (and add_to_cell) are applied when it matches, `otherwise` cells when it does not.
  struct Predicate {
    enum class Kind { kLatestValueEquals, kRowExists, kCellExists };
    Kind kind = Kind::kRowExists;
    std::string qualifier;  // in `family`
    std::string value;      // template (kLatestValueEquals)
  };
  std::optional<Predicate> when;
  std::vector<std::pair<std::string, std::string>> otherwise;
  // unset: the writer's clock (a replay adds a version)
  std::optional<TimestampSpec> timestamp;
  // Skip (rather than fail) a cell whose field is missing [false].
  bool skip_missing_fields = false;
};

// `transform.to_pubsub`: one message per record.
struct PubSubMappingSpec {
  // unset: the record's fields as a JSON object; set: that field's text.
  std::optional<std::string> data_field;
  // attribute -> template
  std::vector<std::pair<std::string, std::string>> attributes;
  // Copy the record's own attributes (e.g. the ordinal) [true].
  bool include_record_attributes = true;
  std::optional<std::string> ordering_key;  // template
};

// `transform.to_cloud_tasks`: one task per record.
struct CloudTasksMappingSpec {
  // Exactly one target: an HTTP URL template, or an App Engine relative URI template.
  std::optional<std::string> url;
  std::optional<std::string> relative_uri;
  std::string method = "POST";  // POST, PUT, PATCH (HTTP only), GET, HEAD, DELETE, OPTIONS
  // unset: the record's fields as a JSON object; set: that field's text.
  std::optional<std::string> body_field;
  // header -> template
  std::vector<std::pair<std::string, std::string>> headers;
  // A template of the deduplication key; the task is named by its SHA-256 (unset: unnamed).
  std::optional<std::string> task_id;
  // OIDC or OAuth token of HTTP targets (service account, audience or scope).
  std::optional<std::pair<std::string, std::string>> oidc_token;
  std::optional<std::pair<std::string, std::string>> oauth_token;
  std::optional<std::chrono::milliseconds> dispatch_deadline;
};

// `transform.to_spanner`: one mutation per record.
struct SpannerMappingSpec {
  std::string table;
  // insert, update, insert_or_update, replace [insert_or_update: idempotent, so a replay after a
  // restore rewrites the same row instead of being refused].
  std::string operation = "insert_or_update";
  struct Column {
    std::string name;
    std::string value;  // template; a bare field name is "{field}"
    // STRING, INT64, FLOAT64, BOOL, NUMERIC, JSON, BYTES, DATE, TIMESTAMP [STRING]
    std::string type = "STRING";
  };
  std::vector<Column> columns;
};

struct TransformSpec {
  std::vector<FieldComparison> keep;  // keep a record only when every comparison holds
  std::vector<FieldComparison> drop;  // then drop it when any comparison holds
  std::optional<OrdinalSpec> ordinal;
  std::optional<BigtableMappingSpec> to_bigtable;
  std::optional<PubSubMappingSpec> to_pubsub;
  std::optional<CloudTasksMappingSpec> to_cloud_tasks;
  std::optional<SpannerMappingSpec> to_spanner;
};

// `failure_handler:`.
struct FailureHandlerSpec {
  enum class Kind { kFail, kLogAndDrop, kDeadLetter };
  Kind kind = Kind::kFail;
  // dead_letter only: the topic (must exist) and the queue's own client options.
  std::string project;
  std::string topic;
  std::optional<std::string> emulator_endpoint;
  std::optional<std::string> service_account_key_file;
  int max_in_flight_messages = 1000;
  std::chrono::milliseconds flush_timeout{std::chrono::seconds(60)};
  std::chrono::milliseconds shutdown_timeout{std::chrono::seconds(30)};
};

struct BigtableSinkSpec {
  std::string project;
  std::string instance;
  std::string table;
  std::optional<std::string> emulator_endpoint;
  std::optional<std::string> service_account_key_file;
  std::string app_profile_id;
  bool create_if_needed = false;
  std::optional<bigtable::TableCreateOptions> table_create_options;
  bigtable::BigtableWriterOptions writer_options;
  // How rows are written: MutateRows batches, or one single-row request per record.
  enum class Mode { kMutateRows, kConditional, kReadModifyWrite };
  Mode mode = Mode::kMutateRows;
  // CONDITIONAL: fail the job when the branch the predicate selected has no mutation.
  bool fail_on_empty_branch = false;
  // Single-row modes: requests in flight and one attempt's deadline.
  bigtable::BigtableRequestOptions request_options;
  // EXACTLY_ONCE: the checkpoint-owned staged mode (BigtableStagedSink), with staged_options.
  bool exactly_once = false;
  bigtable::BigtableStagedOptions staged_options;
};

struct PubSubSinkSpec {
  std::string project;
  std::string topic;
  std::optional<std::string> emulator_endpoint;
  std::optional<std::string> service_account_key_file;
  bool create_if_needed = true;
  std::optional<pubsub::TopicCreateOptions> topic_create_options;
  pubsub::PubSubPublisherOptions publisher_options;
};

struct CloudTasksSinkSpec {
  std::string project;
  std::string location;
  std::string queue;
  std::optional<std::string> emulator_endpoint;
  std::optional<std::string> service_account_key_file;
  tasks::CloudTasksWriterOptions writer_options;
};

struct SpannerSinkSpec {
  std::string project;
  std::string instance;
  std::string database;
  std::optional<std::string> emulator_endpoint;
  std::optional<std::string> service_account_key_file;
  bool route_constraint_violations = false;  // constraint_violation_policy
  spanner::SpannerWriterOptions writer_options;
};

// A BigQuery table written by one of the sink's write methods. Each record's fields are its
// row: the columns of `schema` are taken from them (a field the schema lacks is not written),
// strictly typed (bigquery/schema/json_row_encoder.h).
struct BigQuerySinkSpec {
  std::string project;
  std::string dataset;
  std::string table;
  bigquery::TableSchema schema;
  // STORAGE_API_AT_LEAST_ONCE (the default stream), STORAGE_API_EXACTLY_ONCE (BUFFERED
  // streams flushed when a checkpoint completes) or FILE_LOADS (Avro files staged on Cloud
  // Storage, loaded by load jobs when a checkpoint completes); the last two need checkpointing.
  bigquery::WriteMethod write_method = bigquery::WriteMethod::kStorageApiAtLeastOnce;
  // FILE_LOADS only (and required by it): the `file_loads` mapping.
  std::optional<bigquery::FileLoadsOptions> file_loads;
  bool create_if_needed = true;  // create_disposition
  bigquery::TableCreateOptions table_create_options;
  bigquery::SchemaUpdateOptions schema_update_options;
  std::optional<std::string> emulator_endpoint;
  std::optional<std::string> emulator_rest_endpoint;
  std::optional<std::string> service_account_key_file;
  bigquery::BigQueryWriterOptions writer_options;
};

using SinkSpec = std::variant<BigtableSinkSpec, PubSubSinkSpec, CloudTasksSinkSpec, SpannerSinkSpec,
                              BigQuerySinkSpec>;

struct CheckpointingSpec {
  std::chrono::milliseconds interval{0};  // 0: off
  std::string dir;
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  std::chrono::milliseconds min_pause_between{0};
  int tolerable_failed_checkpoints = 0;
  runtime::CheckpointingMode mode = runtime::CheckpointingMode::kExactlyOnce;
  int retained = 1;
};

struct RestartSpec {
  runtime::RestartStrategy strategy;
};

struct PipelineSpec {
  std::string name;
  int parallelism = 1;
  SourceSpec source;
  TransformSpec transform;
  SinkSpec sink;
  CheckpointingSpec checkpointing;
  RestartSpec restart;
  FailureHandlerSpec failure_handler;
  // Every option the file was read for, in file order (for `describe`).
  std::vector<OptionRecord> options;
};

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_PIPELINE_SPEC_H_
