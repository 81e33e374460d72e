#include "tests/fakes/bigquery/fake_jobs.h"

#include <fmt/format.h>
#include <httplib.h>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "tests/fakes/bigquery/fake_avro_load.h"
#include "tests/fakes/bigquery/fake_query.h"
#include "tests/fakes/bigquery/fake_rest_service.h"

namespace gcpstream::testing::bigquery_fake {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxSourceUris = 10000;
constexpr const char* kDefaultLocation = "US";

// The multi-regions a jobs.get without a location still finds a job in (the jobs.get
// reference: the location must be given for any other).
bool MultiRegion(const std::string& location) {
  return absl::EqualsIgnoreCase(location, "US") || absl::EqualsIgnoreCase(location, "EU");
}

bool ValidJobId(const std::string& id) {
  if (id.empty() || id.size() > 1024) return false;
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

std::string Str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// "projects/P/datasets/D/tables/T" of a TableReference, or INVALID_ARGUMENT.
absl::StatusOr<std::string> TablePath(const json& ref, const std::string& project,
                                      const char* what) {
  const std::string p = Str(ref, "projectId").empty() ? project : Str(ref, "projectId");
  const std::string d = Str(ref, "datasetId");
  const std::string t = Str(ref, "tableId");
  if (d.empty() || t.empty()) {
    return absl::InvalidArgumentError(fmt::format("{} needs datasetId and tableId", what));
  }
  return fmt::format("projects/{}/datasets/{}/tables/{}", p, d, t);
}

absl::Status CheckDispositions(const json& config, const char* default_write = "WRITE_APPEND") {
  const std::string write = config.value("writeDisposition", default_write);
  const std::string create = config.value("createDisposition", "CREATE_IF_NEEDED");
  if (write != "WRITE_APPEND" && write != "WRITE_TRUNCATE" && write != "WRITE_EMPTY") {
    return absl::InvalidArgumentError(
        fmt::format("Invalid writeDisposition \"{}\" (the fake takes WRITE_APPEND, "
                    "WRITE_TRUNCATE and WRITE_EMPTY)",
                    write.substr(0, 64)));
  }
  if (create != "CREATE_IF_NEEDED" && create != "CREATE_NEVER") {
    return absl::InvalidArgumentError(
        fmt::format("Invalid createDisposition \"{}\"", create.substr(0, 64)));
  }
  return absl::OkStatus();
}

absl::Status CheckConfiguration(const json& configuration) {
  if (!configuration.is_object()) {
    return absl::InvalidArgumentError("Required parameter is missing: configuration");
  }
  if (configuration.contains("load")) {
    const json& load = configuration["load"];
    if (Str(load, "sourceFormat") != "AVRO") {
      return absl::InvalidArgumentError(
          "the fake loads only sourceFormat AVRO (it is given explicitly by the connector)");
    }
    if (!load.contains("sourceUris") || !load["sourceUris"].is_array() ||
        load["sourceUris"].empty()) {
      return absl::InvalidArgumentError("Required parameter is missing: sourceUris");
    }
    if (load["sourceUris"].size() > kMaxSourceUris) {
      return absl::InvalidArgumentError(fmt::format(
          "Too many source URIs: {}; a load job takes at most 10000", load["sourceUris"].size()));
    }
    for (const json& uri : load["sourceUris"]) {
      if (!uri.is_string() || !absl::StartsWith(uri.get<std::string>(), "gs://") ||
          uri.get<std::string>().find('*') != std::string::npos) {
        return absl::InvalidArgumentError(
            fmt::format("Invalid source URI {}: the fake takes exact gs://BUCKET/OBJECT URIs",
                        uri.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 1100)));
      }
    }
    if (auto table = TablePath(load.value("destinationTable", json()), "p", "destinationTable");
        !table.ok()) {
      return table.status();
    }
    return CheckDispositions(load);
  }
  if (configuration.contains("copy")) {
    const json& copy = configuration["copy"];
    const bool many = copy.contains("sourceTables") && copy["sourceTables"].is_array() &&
                      !copy["sourceTables"].empty();
    if (!many && !copy.contains("sourceTable")) {
      return absl::InvalidArgumentError("Required parameter is missing: sourceTables");
    }
    if (auto table = TablePath(copy.value("destinationTable", json()), "p", "destinationTable");
        !table.ok()) {
      return table.status();
    }
    return CheckDispositions(copy);
  }
  if (configuration.contains("query")) {
    const json& query = configuration["query"];
    if (Str(query, "query").empty()) {
      return absl::InvalidArgumentError("Required parameter is missing: query");
    }
    if (query.contains("destinationTable")) {
      if (auto table = TablePath(query["destinationTable"], "p", "destinationTable"); !table.ok()) {
        return table.status();
      }
    }
    return CheckDispositions(query, "WRITE_EMPTY");
  }
  return absl::InvalidArgumentError(
      "the fake runs load, copy and query jobs only (configuration.load, .copy or .query)");
}

// A stable 16-hex-digit name part (FNV-1a): the anonymous dataset of a project, and the table a
// query's result lands in there.
std::string Hex16(const std::string& text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return fmt::format("{:016x}", h);
}

json ErrorResult(const absl::Status& st, bool query) {
  std::string reason = query ? "invalidQuery" : "invalid";
  if (st.code() == absl::StatusCode::kNotFound) reason = "notFound";
  if (st.code() == absl::StatusCode::kAlreadyExists) reason = "duplicate";
  return {{"reason", reason}, {"message", std::string(st.message())}};
}

absl::StatusOr<Schema> SchemaOf(const json& table_resource) {
  return ParseSchema(table_resource["schema"].value("fields", json::array()));
}

// Splits "projects/P/datasets/D/tables/T".
std::array<std::string, 3> Parts(const std::string& path) {
  std::array<std::string, 3> out;
  std::vector<std::string> pieces;
  std::size_t at = 0;
  while (at <= path.size()) {
    const std::size_t slash = path.find('/', at);
    pieces.push_back(path.substr(at, slash == std::string::npos ? std::string::npos : slash - at));
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  if (pieces.size() == 6) out = {pieces[1], pieces[3], pieces[5]};
  return out;
}

}  // namespace

FakeJobs::FakeJobs(std::shared_ptr<FakeStore> store, std::shared_ptr<gcs_fake::FakeObjectStore> gcs)
    : store_(std::move(store)), gcs_(std::move(gcs)) {}

void FakeJobs::set_options(int polls_until_done, int lose_insert_responses) {
  std::lock_guard lock(mu_);
  polls_until_done_ = std::max(0, polls_until_done);
  lose_insert_responses_ = std::max(0, lose_insert_responses);
}

int FakeJobs::jobs_created() const {
  std::lock_guard lock(mu_);
  return created_;
}

std::vector<std::string> FakeJobs::queries() const {
  std::lock_guard lock(mu_);
  return queries_;
}

absl::StatusOr<json> FakeJobs::insert(const std::string& project, const json& body) {
  const json reference = body.value("jobReference", json::object());
  std::string id = Str(reference, "jobId");
  // A query reads the tables as they are now, whenever its job finishes.
  std::optional<absl::StatusOr<QueryResult>> query_result;
  if (const json config = body.value("configuration", json());
      config.is_object() && config.contains("query") && !Str(config["query"], "query").empty()) {
    query_result = RunQuery(*store_, config["query"]["query"].get<std::string>(), project);
  }
  std::lock_guard lock(mu_);
  if (id.empty()) id = fmt::format("job_fake_{}", ++generated_);
  if (!ValidJobId(id)) {
    return absl::InvalidArgumentError(
        fmt::format("Invalid job ID \"{}\": letters, numbers, underscores and dashes, at most 1024",
                    id.substr(0, 1100)));
  }
  if (auto existing = jobs_.find(project + "/" + id); existing != jobs_.end()) {
    return absl::AlreadyExistsError(
        fmt::format("Already Exists: Job {}:{}.{}", project,
                    Str(existing->second.resource["jobReference"], "location"), id));
  }
  if (absl::Status st = CheckConfiguration(body.value("configuration", json())); !st.ok()) {
    return st;
  }
  const std::string location = Str(reference, "location").empty()
                                   ? infer_location(project, body["configuration"])
                                   : Str(reference, "location");
  Job& job = jobs_[project + "/" + id];
  if (query_result) queries_.push_back(body["configuration"]["query"]["query"].get<std::string>());
  job.query_result = std::move(query_result);
  ++created_;
  job.resource = {
      {"kind", "bigquery#job"},
      {"id", fmt::format("{}:{}.{}", project, location, id)},
      {"jobReference", {{"projectId", project}, {"jobId", id}, {"location", location}}},
      {"configuration", body["configuration"]},
      {"status", {{"state", "RUNNING"}}},
      {"statistics", {{"creationTime", std::to_string(absl::ToUnixMillis(absl::Now()))}}}};
  if (polls_until_done_ == 0) run(job);
  if (lose_insert_responses_ > 0) {
    --lose_insert_responses_;
    return absl::UnavailableError("the response to jobs.insert was lost (injected)");
  }
  return job.resource;
}

absl::StatusOr<json> FakeJobs::get(const std::string& project, const std::string& job_id,
                                   const std::string& location) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(project + "/" + job_id);
  const std::string at =
      it == jobs_.end() ? "" : Str(it->second.resource["jobReference"], "location");
  // A job is found in its own location; without one, only in the US and EU multi-regions.
  if (it == jobs_.end() || (location.empty() && !MultiRegion(at)) ||
      (!location.empty() && !absl::EqualsIgnoreCase(location, at))) {
    return absl::NotFoundError(fmt::format("Not found: Job {}:{}{}", project,
                                           location.empty() ? "" : location + ".",
                                           job_id.substr(0, 1100)));
  }
  Job& job = it->second;
  if (!job.done && ++job.polls >= polls_until_done_) run(job);
  return job.resource;
}

void FakeJobs::run(Job& job) {
  job.done = true;
  const json& config = job.resource["configuration"];
  json& status = job.resource["status"];
  std::int64_t files = 0;
  const std::string project = job.resource["jobReference"]["projectId"];
  absl::StatusOr<std::int64_t> rows = absl::InternalError("not run");
  try {  // a configuration field of the wrong JSON type fails the job, never leaves it running
    if (config.contains("load")) {
      rows = run_load(config["load"], project, &files);
    } else if (config.contains("copy")) {
      rows = run_copy(config["copy"], project);
    } else {
      rows = run_query(job.resource["configuration"]["query"], project,
                       job.resource["jobReference"]["jobId"].get<std::string>(),
                       job.query_result ? *std::move(job.query_result)
                                        : absl::InternalError("the query was not evaluated"));
    }
  } catch (const json::exception& e) {
    rows = absl::InvalidArgumentError(std::string("Invalid job configuration: ") + e.what());
  }
  status["state"] = "DONE";
  auto& stats = job.resource["statistics"];
  stats["endTime"] = std::to_string(absl::ToUnixMillis(absl::Now()));
  if (!rows.ok()) {
    const bool query = config.contains("query");
    status["errorResult"] = ErrorResult(rows.status(), query);
    status["errors"] = json::array({ErrorResult(rows.status(), query)});
    return;
  }
  if (config.contains("load")) {
    stats["load"] = {{"inputFiles", std::to_string(files)}, {"outputRows", std::to_string(*rows)}};
  } else if (config.contains("query")) {
    stats["query"] = {{"statementType", "SELECT"}, {"cacheHit", false}};
  } else {
    stats["copy"] = {{"copiedRows", std::to_string(*rows)}};
  }
}

absl::StatusOr<std::int64_t> FakeJobs::run_load(const json& load, const std::string& project,
                                                std::int64_t* files) {
  auto path = TablePath(load["destinationTable"], project, "destinationTable");
  if (!path.ok()) return path.status();
  const auto [p, d, t] = Parts(*path);
  const std::string write = load.value("writeDisposition", "WRITE_APPEND");
  const std::string create = load.value("createDisposition", "CREATE_IF_NEEDED");
  std::optional<Schema> job_schema;
  if (load.contains("schema")) {
    auto s = ParseSchema(load["schema"].value("fields", json::array()));
    if (!s.ok()) return s.status();
    job_schema = *std::move(s);
  }
  auto table = store_->get_table(p, d, t);
  if (!table.ok()) {
    if (table.status().code() != absl::StatusCode::kNotFound) return table.status();
    if (create == "CREATE_NEVER") return table.status();
    if (!job_schema) {
      return absl::InvalidArgumentError(
          "the fake creates a load's destination only from configuration.load.schema");
    }
    json resource = {{"tableReference", {{"projectId", p}, {"datasetId", d}, {"tableId", t}}},
                     {"schema", {{"fields", load["schema"]["fields"]}}}};
    if (auto created = store_->insert_table(p, d, resource);
        !created.ok() && created.status().code() != absl::StatusCode::kAlreadyExists) {
      return created.status();
    }
    table = store_->get_table(p, d, t);
    if (!table.ok()) return table.status();
  }
  Schema schema;
  if (write == "WRITE_TRUNCATE" && job_schema) {
    schema = *job_schema;
  } else {
    auto s = SchemaOf(*table);
    if (!s.ok()) return s.status();
    schema = *std::move(s);
  }
  const bool logical = load.value("useAvroLogicalTypes", false);
  std::vector<json> rows;
  for (const json& uri : load["sourceUris"]) {
    const std::string text = uri.get<std::string>();
    const std::string rest = text.substr(5);
    const std::size_t slash = rest.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == rest.size()) {
      return absl::InvalidArgumentError("Invalid source URI " + text.substr(0, 1100));
    }
    auto bytes = gcs_->read(rest.substr(0, slash), rest.substr(slash + 1));
    if (!bytes.ok()) {
      return absl::NotFoundError("Not found: URI " + text.substr(0, 1100));
    }
    auto file_rows = ReadAvroForLoad(*bytes, schema, logical);
    if (!file_rows.ok()) {
      return absl::InvalidArgumentError(fmt::format(
          "{} File: {}", std::string(file_rows.status().message()), text.substr(0, 1100)));
    }
    for (auto& r : *file_rows) rows.push_back(std::move(r));
    ++*files;
  }
  const auto count = static_cast<std::int64_t>(rows.size());
  if (absl::Status st =
          store_->load_rows(*path, std::move(rows), write,
                            write == "WRITE_TRUNCATE" && job_schema ? &schema : nullptr);
      !st.ok()) {
    return st;
  }
  return count;
}

absl::StatusOr<std::int64_t> FakeJobs::run_copy(const json& copy, const std::string& project) {
  std::vector<json> sources;
  if (copy.contains("sourceTables") && copy["sourceTables"].is_array()) {
    for (const json& s : copy["sourceTables"]) sources.push_back(s);
  } else {
    sources.push_back(copy["sourceTable"]);
  }
  std::vector<json> rows;
  std::optional<json> first_fields;
  for (const json& s : sources) {
    auto path = TablePath(s, project, "sourceTable");
    if (!path.ok()) return path.status();
    const auto [p, d, t] = Parts(*path);
    auto table = store_->get_table(p, d, t);
    if (!table.ok()) return table.status();
    if (!first_fields) first_fields = (*table)["schema"].value("fields", json::array());
    auto r = store_->rows(*path);
    if (!r.ok()) return r.status();
    for (auto& row : *r) rows.push_back(std::move(row));
  }
  auto path = TablePath(copy["destinationTable"], project, "destinationTable");
  if (!path.ok()) return path.status();
  const auto [p, d, t] = Parts(*path);
  const std::string write = copy.value("writeDisposition", "WRITE_APPEND");
  auto table = store_->get_table(p, d, t);
  if (!table.ok()) {
    if (table.status().code() != absl::StatusCode::kNotFound ||
        copy.value("createDisposition", "CREATE_IF_NEEDED") == "CREATE_NEVER") {
      return table.status();
    }
    json resource = {{"tableReference", {{"projectId", p}, {"datasetId", d}, {"tableId", t}}},
                     {"schema", {{"fields", *first_fields}}}};
    if (auto created = store_->insert_table(p, d, resource); !created.ok()) {
      return created.status();
    }
  }
  auto schema = ParseSchema(*first_fields);
  if (!schema.ok()) return schema.status();
  const auto count = static_cast<std::int64_t>(rows.size());
  if (absl::Status st = store_->load_rows(*path, std::move(rows), write,
                                          write == "WRITE_TRUNCATE" ? &*schema : nullptr);
      !st.ok()) {
    return st;
  }
  return count;
}

std::string FakeJobs::infer_location(const std::string& project, const json& configuration) const {
  // BigQuery runs a job where its data is: the dataset a query reads, or a load's or copy's
  // destination dataset.
  std::optional<std::pair<std::string, std::string>> dataset;
  if (configuration.contains("query")) {
    dataset = QueryDataset(Str(configuration["query"], "query"), project);
  } else {
    const json& body =
        configuration.contains("load") ? configuration["load"] : configuration["copy"];
    const json ref = body.value("destinationTable", json::object());
    if (!Str(ref, "datasetId").empty()) {
      dataset = std::make_pair(Str(ref, "projectId").empty() ? project : Str(ref, "projectId"),
                               Str(ref, "datasetId"));
    }
  }
  if (dataset) {
    if (auto d = store_->get_dataset(dataset->first, dataset->second); d.ok()) {
      if (const std::string at = Str(*d, "location"); !at.empty()) return at;
    }
  }
  return kDefaultLocation;
}

absl::StatusOr<std::int64_t> FakeJobs::run_query(json& query, const std::string& project,
                                                 const std::string& job_id,
                                                 absl::StatusOr<QueryResult> result) {
  // jobs.insert runs legacy SQL unless told otherwise; the fake evaluates GoogleSQL only.
  if (query.value("useLegacySql", true)) {
    return absl::InvalidArgumentError(
        "the fake runs GoogleSQL only: set configuration.query.useLegacySql to false (jobs.insert "
        "defaults to legacy SQL)");
  }
  if (!result.ok()) return result.status();
  auto schema = ParseSchema(result->fields);
  if (!schema.ok()) return schema.status();
  std::string write = query.value("writeDisposition", "WRITE_EMPTY");
  json reference;
  if (query.contains("destinationTable")) {
    reference = query["destinationTable"];
    if (Str(reference, "projectId").empty()) reference["projectId"] = project;
  } else {
    // No destination: the result goes to an anonymous dataset of the project, which the
    // service creates itself, into a table of this job's that expires after a day (the fake
    // keeps no cache, so a re-run never rewrites a result another reader may still read).
    const std::string dataset = "_" + Hex16(project);
    reference = {{"projectId", project},
                 {"datasetId", dataset},
                 {"tableId", "anon" + Hex16(project + "/" + job_id)}};
    if (auto made =
            store_->insert_dataset(project, {{"datasetReference", {{"datasetId", dataset}}}});
        !made.ok() && made.status().code() != absl::StatusCode::kAlreadyExists) {
      return made.status();
    }
    write = "WRITE_TRUNCATE";
  }
  auto path = TablePath(reference, project, "destinationTable");
  if (!path.ok()) return path.status();
  const auto [p, d, t] = Parts(*path);
  if (auto table = store_->get_table(p, d, t); !table.ok()) {
    if (table.status().code() != absl::StatusCode::kNotFound ||
        query.value("createDisposition", "CREATE_IF_NEEDED") == "CREATE_NEVER") {
      return table.status();
    }
    json resource = {{"tableReference", {{"projectId", p}, {"datasetId", d}, {"tableId", t}}},
                     {"schema", {{"fields", result->fields}}}};
    if (!query.contains("destinationTable")) {
      resource["expirationTime"] =
          std::to_string(absl::ToUnixMillis(absl::Now() + absl::Hours(24)));
    }
    if (auto created = store_->insert_table(p, d, resource); !created.ok()) {
      return created.status();
    }
  }
  const auto count = static_cast<std::int64_t>(result->rows.size());
  if (absl::Status st = store_->load_rows(*path, std::move(result->rows), write,
                                          write == "WRITE_TRUNCATE" ? &*schema : nullptr);
      !st.ok()) {
    return st;
  }
  query["destinationTable"] = reference;  // the job shows where its result went
  return count;
}

void RegisterJobRoutes(httplib::Server& server, std::shared_ptr<FakeJobs> jobs) {
  const std::string p = R"(/bigquery/v2/projects/([^/]+))";
  auto handle = [](auto f) {
    return [f](const httplib::Request& req, httplib::Response& res) {
      auto body = ParseRestBody(req);
      if (!body.ok()) return ReplyStatus(res, body.status());
      absl::StatusOr<json> out;
      try {
        out = f(req, *body);
      } catch (const json::exception& e) {
        out = absl::InvalidArgumentError(std::string("malformed request: ") + e.what());
      }
      if (!out.ok() && out.status().code() == absl::StatusCode::kUnavailable) {
        return ReplyJson(res, 503,
                         {{"error",
                           {{"code", 503},
                            {"message", std::string(out.status().message())},
                            {"status", "UNAVAILABLE"},
                            {"errors", {{{"reason", "backendError"}}}}}}});
      }
      if (!out.ok()) return ReplyStatus(res, out.status());
      ReplyJson(res, 200, *out);
    };
  };
  server.Post(p + "/jobs", handle([jobs](const httplib::Request& req, const json& body) {
                return jobs->insert(req.matches[1], body);
              }));
  server.Get(p + "/jobs/([^/]+)", handle([jobs](const httplib::Request& req, const json&) {
               return jobs->get(req.matches[1], req.matches[2], req.get_param_value("location"));
             }));
  server.Post("/fake/v1/jobs:options",
              handle([jobs](const httplib::Request&, const json& body) -> absl::StatusOr<json> {
                jobs->set_options(body.value("pollsUntilDone", 1),
                                  body.value("loseInsertResponses", 0));
                return json::object();
              }));
}

}  // namespace gcpstream::testing::bigquery_fake
