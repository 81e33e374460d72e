#include "gcpstream/bigquery/sink/load_job_committer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <map>
#include <thread>

#include "gcpstream/bigquery/sink/append_retry.h"

namespace gcpstream::bigquery {
namespace {

// A planned load's table (PlanLoads refused every other shape).
TableRef RefOf(const std::string& path) { return TableRef::parse(path).value_or(TableRef()); }

bool Retriable(const absl::Status& s) {
  return TransientCode(s.code()) && ErrorReasonOf(s) != "quotaExceeded";
}

std::string Str(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// Whether `job` (a jobs resource) is a load of exactly `load`'s files into its table.
bool SameLoad(const nlohmann::json& job, const PlannedLoad& load, const TableRef& table) {
  const nlohmann::json& config =
      job.value("configuration", nlohmann::json::object()).value("load", nlohmann::json());
  if (!config.is_object() || !config.contains("sourceUris") || !config["sourceUris"].is_array()) {
    return false;
  }
  std::vector<std::string> uris;
  for (const auto& u : config["sourceUris"]) {
    if (!u.is_string()) return false;
    uris.push_back(u.get<std::string>());
  }
  std::sort(uris.begin(), uris.end());
  uris.erase(std::unique(uris.begin(), uris.end()), uris.end());
  const nlohmann::json dest = config.value("destinationTable", nlohmann::json::object());
  return uris == load.uris && Str(dest, "datasetId") == table.dataset &&
         Str(dest, "tableId") == table.table &&
         (Str(dest, "projectId").empty() || Str(dest, "projectId") == table.project) &&
         Str(config, "sourceFormat") == load.format;
}

}  // namespace

LoadJobCommitter::LoadJobCommitter(LoadJobCommitterConfig config, MetricGroup& metrics)
    : config_(std::move(config)),
      submitted_(metrics.counter("loadJobsSubmitted")),
      attached_(metrics.counter("loadJobsAttached")),
      polls_(metrics.counter("loadJobPolls")),
      tables_created_(metrics.counter("tablesCreated")) {}

absl::Status LoadJobCommitter::commit(std::vector<CommitRequest<StagedFiles>>& requests) {
  std::vector<StagedFiles> committables;
  committables.reserve(requests.size());
  for (const auto& r : requests) committables.push_back(r.committable());
  auto plan = PlanLoads(committables);
  if (!plan.ok()) {
    for (auto& r : requests) r.signal_failed_with_known_reason(plan.status());
    return absl::OkStatus();
  }
  // A committable belongs to the load of its (checkpoint, table, format); loads run in plan
  // order and the first failure fails that load and every later one.
  std::map<std::tuple<std::int64_t, std::string, std::string>, absl::Status> outcome;
  absl::Status failed;
  for (const PlannedLoad& load : *plan) {
    absl::Status st = failed.ok() ? run(load) : failed;
    if (!st.ok() && failed.ok()) failed = st;
    outcome[{load.checkpoint_id, load.table, load.format}] = st;
  }
  for (auto& r : requests) {
    const StagedFiles& c = r.committable();
    const absl::Status& st = outcome[{c.checkpoint_id, c.table, c.format}];
    if (st.ok()) continue;
    if (Retriable(st)) {
      r.signal_failed_with_unknown_reason(st);
    } else {
      r.signal_failed_with_known_reason(st);
    }
  }
  return absl::OkStatus();
}

nlohmann::json LoadJobCommitter::load_configuration(const PlannedLoad& load,
                                                    const TableSchema& schema) const {
  const TableRef t = RefOf(load.table);
  return {{"load",
           {{"sourceUris", load.uris},
            {"sourceFormat", load.format},
            {"useAvroLogicalTypes", true},
            {"destinationTable",
             {{"projectId", t.project}, {"datasetId", t.dataset}, {"tableId", t.table}}},
            {"schema", {{"fields", TableSchemaToJson(schema)}}},
            {"writeDisposition", config_.write_disposition},
            // The committer reconciled the table; a load never creates one of its own.
            {"createDisposition", "CREATE_NEVER"}}}};
}

absl::Status LoadJobCommitter::run(const PlannedLoad& load) {
  const TableRef table = RefOf(load.table);
  auto reconciled = reconcile(table);
  if (!reconciled.ok()) return reconciled.status();
  const std::string project = config_.job_project.empty() ? table.project : config_.job_project;
  auto job =
      submit(project, load, load_configuration(load, reconciled->schema), reconciled->location);
  if (!job.ok()) return job.status();
  auto done = await_done(project, load, *std::move(job));
  if (!done.ok()) return done.status();
  const nlohmann::json& status = (*done)["status"];
  if (status.contains("errorResult")) {
    const nlohmann::json& e = status["errorResult"];
    return absl::FailedPreconditionError(fmt::format(
        "the BigQuery load job {} into {} ({} file(s) of {}) failed: {} ({}). A load "
        "is all or nothing: no row of it landed. The staged files are kept; a restart re-attaches "
        "to this same job and fails the same way, so fix the cause and start without state, "
        "rewinding the source",
        load.job_id, load.table, load.uris.size(),
        load.checkpoint_id < 0 ? std::string("the end of input")
                               : fmt::format("checkpoint {}", load.checkpoint_id),
        Str(e, "message").substr(0, 2000), Str(e, "reason")));
  }
  spdlog::info("BigQuery committer: load job {} put {} staged row(s) from {} file(s) into {}",
               load.job_id, load.rows, load.uris.size(), load.table);
  clean_up(load);
  return absl::OkStatus();
}

absl::StatusOr<LoadJobCommitter::Reconciled> LoadJobCommitter::reconcile(const TableRef& table) {
  const std::string name = table.resource_name();
  if (auto it = reconciled_.find(name); it != reconciled_.end()) return it->second;
  connector::RecoveryBackoff backoff(config_.recovery);
  for (;;) {
    absl::StatusOr<nlohmann::json> live = config_.admin->get_table(table);
    if (live.ok()) {
      Reconciled r;
      r.schema = config_.schema;
      if (config_.write_disposition != "WRITE_TRUNCATE") {
        auto parsed =
            TableSchemaFromJson((*live)["schema"].value("fields", nlohmann::json::array()));
        if (!parsed.ok()) {
          return absl::Status(parsed.status().code(),
                              fmt::format("the schema of the FILE_LOADS destination {} does not "
                                          "parse: {}",
                                          name, std::string(parsed.status().message())));
        }
        r.schema = *std::move(parsed);
      }
      r.location = Str(*live, "location");
      reconciled_[name] = r;
      return r;
    }
    absl::Status st = live.status();
    if (st.code() == absl::StatusCode::kNotFound) {
      if (config_.create_disposition == CreateDisposition::kCreateNever) {
        return absl::NotFoundError(fmt::format(
            "the FILE_LOADS destination {} does not exist and the create disposition is "
            "CREATE_NEVER: {}",
            name, Describe(st)));
      }
      auto created =
          config_.admin->insert_table(table, config_.table_create_options.resource(config_.schema));
      if (created.ok()) tables_created_.inc();
      // Read it back; a table just created (by us or a racer) may take a moment to show, so
      // that wait is on the recovery schedule too.
      st = created.ok() || created.status().code() == absl::StatusCode::kAlreadyExists
               ? absl::UnavailableError("the table was just created and is not readable yet")
               : created.status();
    }
    if (Retriable(st)) {
      if (auto delay = backoff.next()) {
        spdlog::info(
            "BigQuery committer: reconciling {} failed ({}), attempt {}; retrying in "
            "{} ms",
            name, Describe(st), backoff.attempts(), delay->count());
        std::this_thread::sleep_for(*delay);
        continue;
      }
    }
    return absl::Status(st.code(), fmt::format("reconciling the FILE_LOADS destination {} "
                                               "before its first load failed: {}",
                                               name, Describe(st)));
  }
}

absl::StatusOr<nlohmann::json> LoadJobCommitter::submit(const std::string& project,
                                                        const PlannedLoad& load,
                                                        const nlohmann::json& configuration,
                                                        const std::string& location) {
  const TableRef table = RefOf(load.table);
  connector::RecoveryBackoff backoff(config_.recovery);
  for (;;) {
    absl::StatusOr<nlohmann::json> job =
        config_.admin->insert_job(project, load.job_id, configuration);
    if (job.ok()) {
      submitted_.inc();
      return job;
    }
    absl::Status st = job.status();
    if (st.code() == absl::StatusCode::kAlreadyExists) {
      // An earlier attempt (before a restart, or whose answer was lost) created this id.
      absl::StatusOr<nlohmann::json> existing =
          config_.admin->get_job(project, load.job_id, location);
      if (existing.ok()) {
        if (!SameLoad(*existing, load, table)) {
          return absl::InternalError(fmt::format(
              "the BigQuery job id {} already names a job that is not the load of the same {} "
              "file(s) into {}: refusing to count it as this checkpoint's load (a job id "
              "collision would drop data silently)",
              load.job_id, load.uris.size(), load.table));
        }
        attached_.inc();
        spdlog::info(
            "BigQuery committer: load job {} exists already (an earlier attempt made "
            "it); waiting for it instead of loading again",
            load.job_id);
        return existing;
      }
      st = existing.status();
    }
    if (Retriable(st)) {
      if (auto delay = backoff.next()) {
        spdlog::info(
            "BigQuery committer: submitting load job {} failed ({}), attempt {}; "
            "retrying in {} ms with the same id",
            load.job_id, Describe(st), backoff.attempts(), delay->count());
        std::this_thread::sleep_for(*delay);
        continue;
      }
    }
    return absl::Status(st.code(), fmt::format("submitting the BigQuery load job {} into {} "
                                               "failed: {}",
                                               load.job_id, load.table, Describe(st)));
  }
}

absl::StatusOr<nlohmann::json> LoadJobCommitter::await_done(const std::string& project,
                                                            const PlannedLoad& load,
                                                            nlohmann::json job) {
  connector::RecoveryOptions poll;
  poll.initial_backoff = config_.poll_initial_backoff;
  poll.max_backoff = std::max(config_.poll_max_backoff, config_.poll_initial_backoff);
  poll.max_attempts = INT_MAX;  // a load may run for hours: no attempt cap
  poll.jitter = config_.recovery.jitter;
  connector::RecoveryBackoff poll_backoff(poll);
  connector::RecoveryBackoff error_backoff(config_.recovery);
  const std::string location = Str(job.value("jobReference", nlohmann::json::object()), "location");
  while (Str(job.value("status", nlohmann::json::object()), "state") != "DONE") {
    std::this_thread::sleep_for(poll_backoff.next().value_or(poll.max_backoff));
    polls_.inc();
    absl::StatusOr<nlohmann::json> got = config_.admin->get_job(project, load.job_id, location);
    if (got.ok()) {
      job = *std::move(got);
      error_backoff.reset();
      continue;
    }
    if (Retriable(got.status()) && error_backoff.next()) continue;
    return absl::Status(got.status().code(),
                        fmt::format("polling the BigQuery load job {} into {} failed: {}",
                                    load.job_id, load.table, Describe(got.status())));
  }
  return job;
}

void LoadJobCommitter::clean_up(const PlannedLoad& load) {
  if (!config_.storage) return;
  int failed = 0;
  absl::Status first;
  for (const std::string& uri : load.uris) {
    auto parsed = gcs::ParseGcsUri(uri);
    if (!parsed.ok()) continue;
    absl::Status st = config_.storage->delete_object(parsed->bucket, parsed->object);
    if (!st.ok() && st.code() != absl::StatusCode::kNotFound) {
      if (failed++ == 0) first = st;
    }
  }
  if (failed > 0) {
    spdlog::warn(
        "BigQuery committer: {} of {} staged file(s) of load job {} could not be "
        "deleted (first: {}); the data is loaded, only storage is left behind (a "
        "lifecycle rule on the staging bucket removes it)",
        failed, load.uris.size(), load.job_id, Describe(first));
  }
}

}  // namespace gcpstream::bigquery
