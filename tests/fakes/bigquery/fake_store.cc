#include "tests/fakes/bigquery/fake_store.h"

#include <fmt/format.h>
#include <google/protobuf/util/time_util.h>
#include <re2/re2.h>

#include <random>

#include "google/rpc/status.pb.h"

namespace gcpstream::testing::bigquery_fake {
namespace {

namespace storage = google::cloud::bigquery::storage::v1;
using google::protobuf::util::TimeUtil;
using storage::StorageError;

constexpr char kDefaultStream[] = "_default";

google::protobuf::Timestamp ToProto(absl::Time t) {
  return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

std::string RandomStreamId() {
  static std::mt19937_64 rng{std::random_device{}()};
  static std::mutex mu;
  std::lock_guard lock(mu);
  return fmt::format("{:016x}{:08x}", rng(), static_cast<std::uint32_t>(rng()));
}

// The masked answer the service gives for a table it will not confirm (missing or still
// propagating): ../shared/spec/bigquery.md, "A missing table does not say NOT_FOUND".
grpc::Status MaskedDenial(const std::string& permission, const std::string& table) {
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                      fmt::format("Permission '{}' denied on resource '{}' (or it may not exist).",
                                  permission, table));
}

// resource[reference][field] when it is a string; "" otherwise (refused by the id check).
std::string IdField(const nlohmann::json& resource, const char* reference, const char* field) {
  if (!resource.is_object()) return "";
  auto ref = resource.find(reference);
  if (ref == resource.end() || !ref->is_object()) return "";
  auto id = ref->find(field);
  return id != ref->end() && id->is_string() ? id->get<std::string>() : "";
}

}  // namespace

std::string TablePathOf(const std::string& name) {
  static const RE2 kTable(R"((projects/[^/]+/datasets/[^/]+/tables/[^/]+)(/streams/[^/]+)?)");
  std::string table;
  if (!RE2::FullMatch(name, kTable, &table)) return "";
  return table;
}

grpc::Status WriteError(grpc::StatusCode code, StorageError::StorageErrorCode storage_code,
                        const std::string& entity, const std::string& message) {
  if (storage_code == StorageError::STORAGE_ERROR_CODE_UNSPECIFIED) {
    return grpc::Status(code, message);
  }
  google::rpc::Status detail;
  detail.set_code(static_cast<int>(code));
  detail.set_message(message);
  StorageError error;
  error.set_code(storage_code);
  error.set_entity(entity);
  error.set_error_message(message);
  detail.add_details()->PackFrom(error);
  return grpc::Status(code, message, detail.SerializeAsString());
}

FakeStore::FakeStore() = default;

void FakeStore::set_options(FakeOptions options) {
  std::lock_guard lock(mu_);
  options_ = std::move(options);
  append_ordinal_ = 0;
  flush_ordinal_ = 0;
  read_failures_taken_ = 0;
}

bool FakeStore::take_read_failure() {
  std::lock_guard lock(mu_);
  if (read_failures_taken_ >= options_.read_fail_count) return false;
  ++read_failures_taken_;
  return true;
}

FakeOptions FakeStore::options() const {
  std::lock_guard lock(mu_);
  return options_;
}

void FakeStore::advance_clock(absl::Duration d) {
  std::lock_guard lock(mu_);
  clock_offset_ += d;
}

absl::Time FakeStore::now() const {
  std::lock_guard lock(mu_);
  return now_locked();
}

absl::Time FakeStore::now_locked() const {
  return (options_.clock ? options_.clock() : absl::Now()) + clock_offset_;
}

std::int64_t FakeStore::next_append_ordinal() {
  std::lock_guard lock(mu_);
  return ++append_ordinal_;
}

std::int64_t FakeStore::next_flush_ordinal() {
  std::lock_guard lock(mu_);
  return ++flush_ordinal_;
}

std::int64_t FakeStore::rows_appended() const {
  std::lock_guard lock(mu_);
  return rows_appended_;
}

std::int64_t FakeStore::streams_created() const {
  std::lock_guard lock(mu_);
  return streams_created_;
}

bool FakeStore::propagating(const Table& t) const {
  return now_locked() < t.created + options_.table_propagation;
}

// ---------------------------------------------------------------- REST resources

absl::StatusOr<nlohmann::json> FakeStore::insert_dataset(const std::string& project,
                                                         const nlohmann::json& resource) {
  const std::string id = IdField(resource, "datasetReference", "datasetId");
  static const RE2 kId(R"([A-Za-z0-9_]+)");
  if (id.size() > 1024 || !RE2::FullMatch(id, kId)) {
    return absl::InvalidArgumentError(fmt::format("Invalid dataset ID \"{}\"", id));
  }
  std::lock_guard lock(mu_);
  const std::string path = fmt::format("projects/{}/datasets/{}", project, id);
  if (datasets_.count(path) != 0) {
    return absl::AlreadyExistsError(fmt::format("Already Exists: Dataset {}:{}", project, id));
  }
  nlohmann::json out = resource;
  out["kind"] = "bigquery#dataset";
  out["id"] = project + ":" + id;
  out["datasetReference"] = {{"projectId", project}, {"datasetId", id}};
  if (!out.contains("location")) out["location"] = "US";
  datasets_[path] = out;
  return out;
}

absl::StatusOr<nlohmann::json> FakeStore::get_dataset(const std::string& project,
                                                      const std::string& dataset) const {
  std::lock_guard lock(mu_);
  auto it = datasets_.find(fmt::format("projects/{}/datasets/{}", project, dataset));
  if (it == datasets_.end()) {
    return absl::NotFoundError(fmt::format("Not found: Dataset {}:{}", project, dataset));
  }
  return it->second;
}

void FakeStore::make_visible(Table& table, nlohmann::json row) {
  table.rows.push_back(std::move(row));
  table.row_times.push_back(now_locked());
}

absl::Status FakeStore::snapshot(const std::string& table_path, std::optional<absl::Time> at,
                                 Schema* schema, std::vector<nlohmann::json>* rows) const {
  std::lock_guard lock(mu_);
  auto it = tables_.find(table_path);
  if (it == tables_.end()) {
    return absl::NotFoundError(fmt::format("Not found: Table {}", table_path.substr(0, 1100)));
  }
  const Table& t = it->second;
  if (t.resource.contains("view") || t.resource.contains("materializedView")) {
    return absl::InvalidArgumentError(
        "request failed: non-table entities cannot be read with the storage API");
  }
  const absl::Time now = now_locked();
  if (at) {
    if (*at < now - absl::Hours(168)) {
      return absl::InvalidArgumentError(
          "time travel timestamp exceeds the maximum time travel duration of 168h");
    }
    if (*at > now) {
      return absl::InvalidArgumentError("the snapshot time is in the future");
    }
    if (*at < t.created) {
      return absl::InvalidArgumentError(
          fmt::format("the table {} did not exist at the snapshot time", table_path));
    }
  }
  *schema = t.schema;
  rows->clear();
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    if (!at || t.row_times[i] <= *at) rows->push_back(t.rows[i]);
  }
  return absl::OkStatus();
}

absl::Status FakeStore::insert_rows(const std::string& table_path,
                                    std::vector<nlohmann::json> rows) {
  std::lock_guard lock(mu_);
  auto it = tables_.find(table_path);
  if (it == tables_.end()) {
    return absl::NotFoundError(fmt::format("Not found: Table {}", table_path));
  }
  rows_appended_ += static_cast<std::int64_t>(rows.size());
  for (auto& r : rows) make_visible(it->second, std::move(r));
  return absl::OkStatus();
}

absl::Status FakeStore::load_rows(const std::string& table_path, std::vector<nlohmann::json> rows,
                                  const std::string& write_disposition,
                                  const Schema* replace_schema) {
  std::lock_guard lock(mu_);
  auto it = tables_.find(table_path);
  if (it == tables_.end()) {
    return absl::NotFoundError(fmt::format("Not found: Table {}", table_path.substr(0, 1100)));
  }
  Table& t = it->second;
  if (write_disposition == "WRITE_EMPTY" && !t.rows.empty()) {
    return absl::FailedPreconditionError(
        fmt::format("Already Exists: Table {} is not empty (WRITE_EMPTY)", table_path));
  }
  if (write_disposition == "WRITE_TRUNCATE") {
    t.rows.clear();
    t.row_times.clear();
    t.cdc = CdcLedger();
    if (replace_schema != nullptr) {
      t.schema = *replace_schema;
      t.schema_version = ++schema_versions_;
      ++t.etag;
    }
  }
  rows_appended_ += static_cast<std::int64_t>(rows.size());
  for (auto& r : rows) make_visible(t, std::move(r));
  return absl::OkStatus();
}

nlohmann::json FakeStore::table_json(const std::string& path, const Table& t) const {
  nlohmann::json out = t.resource;
  out["kind"] = "bigquery#table";
  out["type"] = t.resource.contains("view")               ? "VIEW"
                : t.resource.contains("materializedView") ? "MATERIALIZED_VIEW"
                                                          : "TABLE";
  out["etag"] = std::to_string(t.etag);
  out["schema"] = {{"fields", ToJson(t.schema)}};
  out["numRows"] = std::to_string(t.rows.size());
  out["creationTime"] = std::to_string(absl::ToUnixMillis(t.created));
  out["selfLink"] = "/bigquery/v2/" + path;
  return out;
}

absl::StatusOr<nlohmann::json> FakeStore::insert_table(const std::string& project,
                                                       const std::string& dataset,
                                                       const nlohmann::json& resource) {
  const std::string id = IdField(resource, "tableReference", "tableId");
  // Table ids: letters, marks, numbers, connectors, dashes and spaces, up to 1,024 bytes; the
  // fake keeps to the ASCII part of that.
  static const RE2 kId(R"([A-Za-z0-9_\- ]+)");
  if (id.size() > 1024 || !RE2::FullMatch(id, kId)) {
    return absl::InvalidArgumentError(fmt::format("Invalid table ID \"{}\"", id));
  }
  Table t;
  if (resource.contains("schema")) {
    auto schema = ParseSchema(resource["schema"].value("fields", nlohmann::json::array()));
    if (!schema.ok()) return schema.status();
    t.schema = std::move(*schema);
  }
  // A `view` or `materializedView` makes the table a view: the Storage Read API refuses it.
  for (const char* key :
       {"timePartitioning", "rangePartitioning", "clustering", "description", "labels",
        "tableConstraints", "view", "materializedView", "expirationTime"}) {
    if (resource.contains(key)) t.resource[key] = resource[key];
  }
  if (t.resource.contains("clustering")) {
    // Up to four clustering columns, each a top-level column of the schema.
    const auto fields = t.resource["clustering"].value("fields", nlohmann::json::array());
    if (fields.size() > 4) {
      return absl::InvalidArgumentError("Too many clustering fields: at most 4");
    }
    for (const auto& f : fields) {
      if (!f.is_string() || FindField(t.schema, f.get<std::string>()) == nullptr) {
        return absl::InvalidArgumentError(fmt::format(
            "The field specified for clustering cannot be found in the schema: {}", f.dump()));
      }
    }
  }
  if (absl::Status pk = CheckPrimaryKey(t.resource, t.schema); !pk.ok()) return pk;
  if (t.resource.contains("timePartitioning")) {
    const auto& p = t.resource["timePartitioning"];
    const std::string type = p.value("type", "DAY");
    if (type != "DAY" && type != "HOUR" && type != "MONTH" && type != "YEAR") {
      return absl::InvalidArgumentError("Invalid timePartitioning type " + type);
    }
    if (p.contains("field")) {
      const Field* f = FindField(t.schema, p["field"].get<std::string>());
      if (f == nullptr || (f->type != "DATE" && f->type != "TIMESTAMP" && f->type != "DATETIME")) {
        return absl::InvalidArgumentError(
            "The field specified for time partitioning must be a top-level DATE, TIMESTAMP or "
            "DATETIME column");
      }
    }
  }
  std::lock_guard lock(mu_);
  const std::string dataset_path = fmt::format("projects/{}/datasets/{}", project, dataset);
  if (datasets_.count(dataset_path) == 0) {
    return absl::NotFoundError(fmt::format("Not found: Dataset {}:{}", project, dataset));
  }
  const std::string path = dataset_path + "/tables/" + id;
  if (tables_.count(path) != 0) {
    return absl::AlreadyExistsError(
        fmt::format("Already Exists: Table {}:{}.{}", project, dataset, id));
  }
  t.resource["tableReference"] = {{"projectId", project}, {"datasetId", dataset}, {"tableId", id}};
  t.resource["id"] = fmt::format("{}:{}.{}", project, dataset, id);
  t.resource["type"] = "TABLE";
  t.created = now_locked();
  // Versions never repeat across the store: a table dropped and created again under the same
  // name is a new schema to every connection that knew the old one.
  t.schema_version = ++schema_versions_;
  auto& stored = tables_[path] = std::move(t);
  return table_json(path, stored);
}

absl::Status FakeStore::delete_table(const std::string& project, const std::string& dataset,
                                     const std::string& table) {
  std::lock_guard lock(mu_);
  const std::string path =
      fmt::format("projects/{}/datasets/{}/tables/{}", project, dataset, table);
  if (tables_.erase(path) == 0) {
    return absl::NotFoundError(fmt::format("Not found: Table {}:{}.{}", project, dataset, table));
  }
  // Its write streams go with it: a table created again under the name starts with none.
  std::erase_if(streams_, [&](const auto& entry) { return entry.second.table == path; });
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::json> FakeStore::get_table(const std::string& project,
                                                    const std::string& dataset,
                                                    const std::string& table) const {
  std::lock_guard lock(mu_);
  const std::string path =
      fmt::format("projects/{}/datasets/{}/tables/{}", project, dataset, table);
  auto it = tables_.find(path);
  if (it == tables_.end()) {
    return absl::NotFoundError(fmt::format("Not found: Table {}:{}.{}", project, dataset, table));
  }
  return table_json(path, it->second);
}

absl::StatusOr<nlohmann::json> FakeStore::update_table(const std::string& project,
                                                       const std::string& dataset,
                                                       const std::string& table,
                                                       const nlohmann::json& resource, bool replace,
                                                       const std::string& if_match) {
  std::optional<Schema> next;
  if (resource.contains("schema")) {
    auto schema = ParseSchema(resource["schema"].value("fields", nlohmann::json::array()));
    if (!schema.ok()) return schema.status();
    next = std::move(*schema);
  }
  std::lock_guard lock(mu_);
  const std::string path =
      fmt::format("projects/{}/datasets/{}/tables/{}", project, dataset, table);
  auto it = tables_.find(path);
  if (it == tables_.end()) {
    return absl::NotFoundError(fmt::format("Not found: Table {}:{}.{}", project, dataset, table));
  }
  Table& t = it->second;
  // If-Match: a stale etag answers 412 Precondition Failed (the REST API's conditional update).
  if (!if_match.empty() && if_match != std::to_string(t.etag) &&
      if_match != "\"" + std::to_string(t.etag) + "\"") {
    return absl::FailedPreconditionError("Precondition check failed.");
  }
  if (replace && !next) next = Schema{};
  if (next) {
    if (absl::Status s = CheckWidening(t.schema, *next); !s.ok()) return s;
    t.schema = std::move(*next);
    t.schema_version = ++schema_versions_;
  }
  for (const char* key : {"description", "labels", "clustering", "expirationTime"}) {
    if (resource.contains(key)) t.resource[key] = resource[key];
  }
  ++t.etag;
  return table_json(path, t);
}

absl::StatusOr<std::vector<nlohmann::json>> FakeStore::rows(const std::string& table_path) const {
  std::lock_guard lock(mu_);
  auto it = tables_.find(table_path);
  if (it == tables_.end()) return absl::NotFoundError("Not found: Table " + table_path);
  return it->second.rows;
}

// ---------------------------------------------------------------- Storage Write API

grpc::Status FakeStore::create_write_stream(const std::string& parent, WriteStream::Type type,
                                            WriteStream* out) {
  if (TablePathOf(parent) != parent) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "parent must be projects/{project}/datasets/{dataset}/tables/{table}");
  }
  if (type != WriteStream::COMMITTED && type != WriteStream::PENDING &&
      type != WriteStream::BUFFERED) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "write_stream.type must be COMMITTED, PENDING or BUFFERED");
  }
  std::lock_guard lock(mu_);
  auto table = tables_.find(parent);
  if (table == tables_.end() || propagating(table->second)) {
    return MaskedDenial("TABLES_UPDATE_DATA", parent);
  }
  const std::string name = parent + "/streams/" + RandomStreamId();
  Stream& s = streams_[name];
  s.table = parent;
  s.type = type;
  s.created = s.last_used = now_locked();
  ++streams_created_;
  out->set_name(name);
  out->set_type(type);
  out->set_write_mode(WriteStream::INSERT);
  *out->mutable_create_time() = ToProto(s.created);
  out->set_location("US");
  return grpc::Status::OK;
}

grpc::Status FakeStore::find_stream(const std::string& name, Stream** out) {
  auto it = streams_.find(name);
  if (it != streams_.end() && now_locked() - it->second.last_used >= options_.stream_idle_expiry) {
    streams_.erase(it);
    it = streams_.end();
  }
  if (it == streams_.end()) {
    return WriteError(grpc::StatusCode::NOT_FOUND, StorageError::STREAM_NOT_FOUND, name,
                      "Requested stream " + name + " not found");
  }
  *out = &it->second;
  return grpc::Status::OK;
}

grpc::Status FakeStore::stream_table(const std::string& stream, std::string* table_path,
                                     Schema* schema, std::int64_t* schema_version,
                                     bool* default_stream) {
  const std::string table = TablePathOf(stream);
  if (table.empty() || table == stream) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "write_stream must be projects/*/datasets/*/tables/*/streams/*");
  }
  std::lock_guard lock(mu_);
  *default_stream = stream == table + "/streams/" + kDefaultStream;
  if (!*default_stream) {
    Stream* s = nullptr;
    if (grpc::Status st = find_stream(stream, &s); !st.ok()) return st;
  }
  auto it = tables_.find(table);
  if (it == tables_.end() || (*default_stream && propagating(it->second))) {
    return MaskedDenial(it == tables_.end() ? "TABLES_GET" : "TABLES_UPDATE_DATA", table);
  }
  *table_path = table;
  *schema = it->second.schema;
  *schema_version = it->second.schema_version;
  return grpc::Status::OK;
}

grpc::Status FakeStore::append(const std::string& stream, std::optional<std::int64_t> offset,
                               std::vector<nlohmann::json> rows, std::int64_t* first_row) {
  const std::string table_path = TablePathOf(stream);
  std::lock_guard lock(mu_);
  auto table = tables_.find(table_path);
  if (table == tables_.end()) return MaskedDenial("TABLES_GET", table_path);
  if (stream == table_path + "/streams/" + kDefaultStream) {
    if (offset) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "The default stream does not accept offsets: leave offset unset");
    }
    *first_row = static_cast<std::int64_t>(table->second.rows.size());
    if (!rows.empty() && rows.front().contains(kChangeTypeField)) {
      // CDC rows: upserts and deletes by the table's primary key.
      std::vector<std::string> key = PrimaryKeyColumns(table->second.resource);
      if (key.empty()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "_CHANGE_TYPE needs a table with a primary key: " + table_path);
      }
      for (auto& column : key) {  // the schema's spelling, as decoded rows carry it
        if (const Field* f = FindField(table->second.schema, column)) column = f->name;
      }
      rows_appended_ += static_cast<std::int64_t>(rows.size());
      ApplyChanges(key, std::move(rows), now_locked(), &table->second.rows,
                   &table->second.row_times, &table->second.cdc);
      return grpc::Status::OK;
    }
    rows_appended_ += static_cast<std::int64_t>(rows.size());
    for (auto& r : rows) make_visible(table->second, std::move(r));
    return grpc::Status::OK;
  }
  if (!rows.empty() && rows.front().contains(kChangeTypeField)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "_CHANGE_TYPE is only supported on the default stream: " + stream);
  }
  Stream* s = nullptr;
  if (grpc::Status st = find_stream(stream, &s); !st.ok()) return st;
  if (s->finalized) {
    return WriteError(grpc::StatusCode::INVALID_ARGUMENT, StorageError::STREAM_FINALIZED, stream,
                      "Stream is finalized: " + stream);
  }
  const auto end = static_cast<std::int64_t>(s->rows.size());
  if (offset && *offset < end) {
    return WriteError(
        grpc::StatusCode::ALREADY_EXISTS, StorageError::OFFSET_ALREADY_EXISTS, stream,
        fmt::format("The offset is within stream, expected offset {}, received {}", end, *offset));
  }
  if (offset && *offset > end) {
    return WriteError(
        grpc::StatusCode::OUT_OF_RANGE, StorageError::OFFSET_OUT_OF_RANGE, stream,
        fmt::format("The offset is beyond stream, expected offset {}, received {}", end, *offset));
  }
  s->last_used = now_locked();
  *first_row = end;
  rows_appended_ += static_cast<std::int64_t>(rows.size());
  for (auto& r : rows) {
    if (s->type == WriteStream::COMMITTED) make_visible(table->second, r);
    s->rows.push_back(std::move(r));
  }
  return grpc::Status::OK;
}

grpc::Status FakeStore::get_write_stream(const std::string& name, bool full, WriteStream* out) {
  const std::string table_path = TablePathOf(name);
  std::lock_guard lock(mu_);
  auto table = tables_.find(table_path);
  if (table_path.empty() || table == tables_.end()) {
    return MaskedDenial("TABLES_GET", table_path.empty() ? name : table_path);
  }
  out->set_name(name);
  out->set_write_mode(WriteStream::INSERT);
  out->set_location("US");
  if (name == table_path + "/streams/" + kDefaultStream) {
    out->set_type(WriteStream::COMMITTED);
    *out->mutable_create_time() = ToProto(table->second.created);
  } else {
    Stream* s = nullptr;
    if (grpc::Status st = find_stream(name, &s); !st.ok()) return st;
    out->set_type(s->type);
    *out->mutable_create_time() = ToProto(s->created);
    if (s->committed) *out->mutable_commit_time() = ToProto(s->commit_time);
  }
  if (full) *out->mutable_table_schema() = ToStorageSchema(table->second.schema);
  return grpc::Status::OK;
}

grpc::Status FakeStore::finalize_write_stream(const std::string& name, std::int64_t* row_count) {
  std::lock_guard lock(mu_);
  if (TablePathOf(name) + "/streams/" + kDefaultStream == name) {
    return WriteError(grpc::StatusCode::INVALID_ARGUMENT, StorageError::INVALID_STREAM_TYPE, name,
                      "The default stream cannot be finalized");
  }
  Stream* s = nullptr;
  if (grpc::Status st = find_stream(name, &s); !st.ok()) return st;
  s->finalized = true;  // finalizing again is harmless and answers the same count
  s->last_used = now_locked();
  *row_count = static_cast<std::int64_t>(s->rows.size());
  return grpc::Status::OK;
}

grpc::Status FakeStore::flush_rows(const std::string& name, std::optional<std::int64_t> offset,
                                   std::int64_t* flushed) {
  std::lock_guard lock(mu_);
  Stream* s = nullptr;
  if (grpc::Status st = find_stream(name, &s); !st.ok()) return st;
  auto table = tables_.find(s->table);
  if (table == tables_.end() || propagating(table->second)) {
    return MaskedDenial("TABLES_UPDATE_DATA", s->table);
  }
  if (s->type != WriteStream::BUFFERED) {
    return WriteError(grpc::StatusCode::INVALID_ARGUMENT, StorageError::INVALID_STREAM_TYPE, name,
                      "FlushRows applies only to BUFFERED streams");
  }
  if (s->finalized) {
    return WriteError(grpc::StatusCode::INVALID_ARGUMENT, StorageError::STREAM_FINALIZED, name,
                      "Stream is finalized: " + name);
  }
  if (!offset || *offset < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "FlushRows needs an offset >= 0");
  }
  const auto end = static_cast<std::int64_t>(s->rows.size());
  if (*offset >= end) {
    return WriteError(grpc::StatusCode::OUT_OF_RANGE, StorageError::OFFSET_OUT_OF_RANGE, name,
                      fmt::format("Flush offset {} is beyond the stream's end {}", *offset, end));
  }
  // Rows up to and including `offset` become visible; a flush at or below the cursor is a no-op
  // that succeeds.
  for (std::int64_t i = s->flushed; i <= *offset; ++i) {
    make_visible(table->second, s->rows[static_cast<std::size_t>(i)]);
  }
  s->flushed = std::max(s->flushed, *offset + 1);
  s->last_used = now_locked();
  *flushed = *offset;
  return grpc::Status::OK;
}

grpc::Status FakeStore::batch_commit(const storage::BatchCommitWriteStreamsRequest& request,
                                     storage::BatchCommitWriteStreamsResponse* out) {
  std::lock_guard lock(mu_);
  auto table = tables_.find(request.parent());
  if (table == tables_.end()) return MaskedDenial("TABLES_UPDATE_DATA", request.parent());
  if (request.write_streams().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "write_streams must not be empty");
  }
  std::vector<Stream*> streams;
  auto error = [&](StorageError::StorageErrorCode code, const std::string& name,
                   const std::string& message) {
    auto* e = out->add_stream_errors();
    e->set_code(code);
    e->set_entity(name);
    e->set_error_message(message);
  };
  for (const auto& name : request.write_streams()) {
    Stream* s = nullptr;
    if (!find_stream(name, &s).ok()) {
      error(StorageError::STREAM_NOT_FOUND, name, "stream not found");
    } else if (s->table != request.parent()) {
      error(StorageError::INVALID_STREAM_STATE, name, "stream belongs to another table");
    } else if (s->type != WriteStream::PENDING) {
      error(StorageError::INVALID_STREAM_TYPE, name, "only PENDING streams are batch-committed");
    } else if (s->committed) {
      error(StorageError::STREAM_ALREADY_COMMITTED, name, "stream already committed");
    } else if (!s->finalized) {
      error(StorageError::INVALID_STREAM_STATE, name, "stream is not finalized");
    } else {
      streams.push_back(s);
    }
  }
  // Atomic: one refused stream commits none of them (commit_time stays unset).
  if (out->stream_errors_size() > 0) return grpc::Status::OK;
  const absl::Time t = now_locked();
  for (Stream* s : streams) {
    for (const auto& r : s->rows) make_visible(table->second, r);
    s->committed = true;
    s->commit_time = t;
  }
  *out->mutable_commit_time() = ToProto(t);
  return grpc::Status::OK;
}

}  // namespace gcpstream::testing::bigquery_fake
