#include "gcpstream/bigquery/source/query_job.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <climits>
#include <thread>

#include "absl/random/random.h"
#include "absl/strings/numbers.h"
#include "gcpstream/connector/recovery_backoff.h"
#include "gcpstream/util/sha256.h"

namespace gcpstream::bigquery {
namespace {

using nlohmann::json;

constexpr int kMaxProbes = 100;
constexpr char kWho[] = "BigQuerySource";

std::string Str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

std::string Describe(const absl::Status& s) {
  return absl::StatusCodeToString(s.code()) + ": " + std::string(s.message());
}

bool Transient(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kInternal:
      return true;
    case absl::StatusCode::kResourceExhausted:
      return ErrorReasonOf(s) != "quotaExceeded";
    default:
      return false;
  }
}

// The code a job's errorResult reason stands for (the v2 error reasons' documented HTTP
// statuses, mapped as the REST client maps them).
absl::StatusCode CodeOfReason(const std::string& reason) {
  if (reason == "notFound") return absl::StatusCode::kNotFound;
  if (reason == "invalidQuery" || reason == "invalid") return absl::StatusCode::kInvalidArgument;
  if (reason == "accessDenied") return absl::StatusCode::kPermissionDenied;
  if (reason == "quotaExceeded" || reason == "rateLimitExceeded") {
    return absl::StatusCode::kResourceExhausted;
  }
  if (reason == "backendError") return absl::StatusCode::kUnavailable;
  if (reason == "internalError") return absl::StatusCode::kInternal;
  if (reason == "stopped") return absl::StatusCode::kCancelled;
  return absl::StatusCode::kUnknown;
}

bool Done(const json& job) { return Str(job.value("status", json::object()), "state") == "DONE"; }

// The job's status.errorResult, or null (a pointer into `job` itself, never into a copy).
const json* ErrorOf(const json& job) {
  const auto status = job.find("status");
  if (status == job.end() || !status->is_object()) return nullptr;
  const auto error = status->find("errorResult");
  return error != status->end() && error->is_object() ? &*error : nullptr;
}

// "projects/P/datasets/D/tables/T" of the job's configuration.query.destinationTable.
absl::StatusOr<TableRef> ResultTableOf(const json& job, const std::string& id) {
  const json config = job.value("configuration", json::object());
  const json query = config.is_object() ? config.value("query", json::object()) : json::object();
  const json ref = query.is_object() ? query.value("destinationTable", json()) : json();
  TableRef t{Str(ref, "projectId"), Str(ref, "datasetId"), Str(ref, "tableId")};
  if (t.project.empty() || t.dataset.empty() || t.table.empty()) {
    return absl::FailedPreconditionError(
        fmt::format("{}: the finished query job {} names no destination table", kWho, id));
  }
  return t;
}

class Runner {
 public:
  Runner(const TableAdmin& admin, const QueryJobSpec& spec, const std::atomic<bool>* cancelled,
         std::function<absl::Time()> now)
      : admin_(admin), spec_(spec), cancelled_(cancelled), now_(std::move(now)) {
    if (!now_) now_ = [] { return absl::Now(); };
  }

  absl::StatusOr<QueryJobOutcome> run() {
    if (spec_.reuse_within.count() <= 0) {
      absl::BitGen gen;
      const std::string id =
          fmt::format("gcpstream_query_{:016x}{:016x}", absl::Uniform<std::uint64_t>(gen),
                      absl::Uniform<std::uint64_t>(gen));
      bool existed = false;
      auto job = insert(id, &existed);
      if (!job.ok()) return job.status();
      if (existed) {
        return absl::AlreadyExistsError(
            fmt::format("{}: the random query job id {} is taken; plan again", kWho, id));
      }
      return finish(id, *std::move(job), false);
    }
    const std::string base = ReusableQueryJobId(spec_);
    for (int probe = 0; probe < kMaxProbes; ++probe) {
      const std::string id = probe == 0 ? base : fmt::format("{}_r{}", base, probe);
      bool existed = false;
      auto job = insert(id, &existed);
      if (!job.ok()) return job.status();
      if (!existed) return finish(id, *std::move(job), false);
      auto fetched = admin_.get_job(spec_.project, id, spec_.location);
      if (!fetched.ok()) return fail(id, "fetching", fetched.status());
      std::string why;
      std::int64_t created_ms = 0;
      const json stats = fetched->value("statistics", json::object());
      if (absl::SimpleAtoi(Str(stats, "creationTime"), &created_ms) &&
          absl::FromUnixMillis(created_ms) + absl::FromChrono(spec_.reuse_within) < now_()) {
        why = "was created before the reuse window began";
      }
      if (why.empty()) {
        auto done = await(id, *std::move(fetched));
        if (!done.ok()) return done.status();
        fetched = *std::move(done);
        if (const json* e = ErrorOf(*fetched)) {
          why =
              fmt::format("failed ({}: {})", Str(*e, "reason"), Str(*e, "message").substr(0, 300));
        } else {
          auto table = ResultTableOf(*fetched, id);
          if (!table.ok()) return table.status();
          auto live = admin_.get_table(*table);
          if (live.status().code() == absl::StatusCode::kNotFound) {
            why = fmt::format("finished, but its result table {} is gone", table->resource_name());
          } else if (!live.ok()) {
            return fail(id, "looking up the result table of", live.status());
          }
        }
      }
      if (!why.empty()) {
        spdlog::info("{}: an earlier attempt's query job {} {}; probing the next id", kWho, id,
                     why);
        continue;
      }
      outcome_.reattached = true;
      spdlog::info("{}: reusing query job {}, which an earlier attempt of {} submitted", kWho, id,
                   spec_.job_name);
      return finish(id, *std::move(fetched), true);
    }
    return absl::FailedPreconditionError(fmt::format(
        "{}: {} query job ids derived from {} are all taken by failed or stale jobs; rename the "
        "job or wait for the reuse window to pass",
        kWho, kMaxProbes, base));
  }

 private:
  json configuration(const std::string& id) const {
    json query = {{"query", spec_.query}, {"useLegacySql", false}};
    if (!spec_.result_dataset.empty()) {
      query["destinationTable"] = {{"projectId", spec_.project},
                                   {"datasetId", spec_.result_dataset},
                                   {"tableId", "gcpstream_result_" + id}};
      query["writeDisposition"] = "WRITE_TRUNCATE";
      query["createDisposition"] = "CREATE_IF_NEEDED";
    }
    return {{"query", query}};
  }

  absl::Status cancelled(const std::string& id) const {
    return absl::CancelledError(fmt::format(
        "{}: stopped waiting for query job {}: the job is stopping (BigQuery still runs the "
        "query; cancel it there if that matters)",
        kWho, id));
  }

  absl::Status fail(const std::string& id, const char* doing, const absl::Status& s) const {
    return absl::Status(
        s.code(), fmt::format("{}: {} query job {} failed: {}", kWho, doing, id, Describe(s)));
  }

  // jobs.insert, retried with the same id while it fails transiently. `existed`: the id was
  // taken (409) before any attempt of ours. A 409 after an attempt whose answer was lost is this
  // run's own job, fetched and returned as created.
  absl::StatusOr<json> insert(const std::string& id, bool* existed) {
    connector::RecoveryBackoff backoff(connector::RecoveryOptions{});
    bool tried = false;
    for (;;) {
      auto job = admin_.insert_job(spec_.project, id, configuration(id), spec_.location);
      const bool taken = job.status().code() == absl::StatusCode::kAlreadyExists;
      if (taken && !tried) {
        *existed = true;
        return json::object();
      }
      if (job.ok() || taken) {
        ++outcome_.submitted;
        spdlog::info("{}: submitted query job {} in project {}{}", kWho, id, spec_.project,
                     spec_.location.empty() ? "" : " at " + spec_.location);
        if (job.ok()) return job;
        auto fetched = admin_.get_job(spec_.project, id, spec_.location);
        if (!fetched.ok()) return fail(id, "fetching", fetched.status());
        return fetched;
      }
      if (!Transient(job.status())) return fail(id, "submitting", job.status());
      auto delay = backoff.next();
      if (!delay) return fail(id, "submitting", job.status());
      spdlog::warn("{}: submitting query job {} failed ({}); retrying with the same id", kWho, id,
                   Describe(job.status()));
      if (cancelled_ != nullptr && cancelled_->load()) return cancelled(id);
      std::this_thread::sleep_for(*delay);
      tried = true;
    }
  }

  absl::StatusOr<json> await(const std::string& id, json job) {
    connector::RecoveryOptions poll;
    poll.initial_backoff = spec_.poll_initial;
    poll.max_backoff = std::max(spec_.poll_max, spec_.poll_initial);
    poll.max_attempts = INT_MAX;  // a query may run for hours
    connector::RecoveryBackoff poll_backoff(poll);
    connector::RecoveryBackoff errors(connector::RecoveryOptions{});
    while (!Done(job)) {
      if (cancelled_ != nullptr && cancelled_->load()) return cancelled(id);
      std::this_thread::sleep_for(poll_backoff.next().value_or(poll.max_backoff));
      auto got = admin_.get_job(spec_.project, id, spec_.location);
      if (got.ok()) {
        job = *std::move(got);
        errors.reset();
        continue;
      }
      if (Transient(got.status()) && errors.next()) continue;
      return fail(id, "polling", got.status());
    }
    return job;
  }

  absl::StatusOr<QueryJobOutcome> finish(const std::string& id, json job, bool adopted) {
    auto done = await(id, std::move(job));
    if (!done.ok()) return done.status();
    if (const json* e = ErrorOf(*done)) {
      const std::string reason = Str(*e, "reason");
      return absl::Status(CodeOfReason(reason),
                          fmt::format("{}: query job {} failed: {} (reason {})", kWho, id,
                                      Str(*e, "message").substr(0, 2000), reason));
    }
    auto table = ResultTableOf(*done, id);
    if (!table.ok()) return table.status();
    if (!spec_.result_dataset.empty() && !adopted) {
      const json patch = {
          {"expirationTime", std::to_string(absl::ToUnixMillis(absl::Now() + absl::Hours(24)))}};
      if (auto patched = admin_.patch_table(*table, patch, ""); !patched.ok()) {
        spdlog::warn(
            "{}: setting a one-day expiration on the query result {} failed ({}); it "
            "stays until deleted",
            kWho, table->resource_name(), Describe(patched.status()));
      }
    }
    spdlog::info("{}: query job {} finished; its result is in {}", kWho, id,
                 table->resource_name());
    outcome_.job_id = id;
    outcome_.result_table = table->resource_name();
    return outcome_;
  }

  const TableAdmin& admin_;
  const QueryJobSpec& spec_;
  const std::atomic<bool>* cancelled_;
  std::function<absl::Time()> now_;
  QueryJobOutcome outcome_;
};

}  // namespace

std::string ReusableQueryJobId(const QueryJobSpec& spec) {
  // Every field length-prefixed, so two different configurations never hash the same text.
  std::string text;
  for (const std::string* field :
       {&spec.job_name, &spec.query, &spec.project, &spec.location, &spec.result_dataset}) {
    text += fmt::format("{}:{}\n", field->size(), *field);
  }
  text += fmt::format("window_ms:{}\n", spec.reuse_within.count());
  return "gcpstream_query_" + util::Sha256Hex(text).substr(0, 16);
}

absl::StatusOr<QueryJobOutcome> RunQueryJob(const TableAdmin& admin, const QueryJobSpec& spec,
                                            const std::atomic<bool>* cancelled,
                                            std::function<absl::Time()> now) {
  return Runner(admin, spec, cancelled, std::move(now)).run();
}

}  // namespace gcpstream::bigquery
