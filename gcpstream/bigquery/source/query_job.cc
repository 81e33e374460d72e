#include "gcpstream/bigquery/source/query_job.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <optional>
#include <thread>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "gcpstream/bigquery/client/status_text.h"
#include "gcpstream/connector/recovery_backoff.h"
#include "gcpstream/util/sha256.h"

namespace gcpstream::bigquery {
namespace {

using nlohmann::json;

constexpr int kMaxProbes = 100;
constexpr char kWho[] = "BigQuerySource";
// How far a job's creation time may precede this run's start and still be this run's own
// (the server's clock against ours).
constexpr absl::Duration kClockSlack = absl::Seconds(5);

// The member `key` of `j`, or null: never a copy, never a throw on a value of another type.
const json* Member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string Str(const json* j, const char* key) {
  const json* v = j == nullptr ? nullptr : Member(*j, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

// The code a job's errorResult reason stands for (the documented HTTP status of each v2 error
// reason, mapped as the REST client maps statuses).
absl::StatusCode CodeOfReason(const std::string& reason) {
  if (reason == "notFound") return absl::StatusCode::kNotFound;
  if (reason == "invalidQuery" || reason == "invalid") return absl::StatusCode::kInvalidArgument;
  if (reason == "accessDenied" || reason == "billingNotEnabled") {
    return absl::StatusCode::kPermissionDenied;
  }
  if (reason == "quotaExceeded" || reason == "rateLimitExceeded" || reason == "resourcesExceeded") {
    return absl::StatusCode::kResourceExhausted;
  }
  if (reason == "responseTooLarge") return absl::StatusCode::kFailedPrecondition;
  if (reason == "timeout") return absl::StatusCode::kDeadlineExceeded;
  if (reason == "backendError") return absl::StatusCode::kUnavailable;
  if (reason == "internalError") return absl::StatusCode::kInternal;
  if (reason == "stopped") return absl::StatusCode::kCancelled;
  return absl::StatusCode::kUnknown;
}

bool Done(const json& job) { return Str(Member(job, "status"), "state") == "DONE"; }

const json* ErrorOf(const json& job) {
  const json* error = Member(job, "status");
  error = error == nullptr ? nullptr : Member(*error, "errorResult");
  return error != nullptr && error->is_object() ? error : nullptr;
}

std::optional<absl::Time> CreatedAt(const json& job) {
  std::int64_t ms = 0;
  if (!absl::SimpleAtoi(Str(Member(job, "statistics"), "creationTime"), &ms)) return std::nullopt;
  return absl::FromUnixMillis(ms);
}

const json* QueryConfig(const json& job) {
  const json* config = Member(job, "configuration");
  return config == nullptr ? nullptr : Member(*config, "query");
}

class Runner {
 public:
  Runner(const TableAdmin& admin, const QueryJobSpec& spec, const std::atomic<bool>* cancelled,
         QueryJobSubmitted on_submitted, std::function<absl::Time()> now)
      : admin_(admin),
        spec_(spec),
        cancelled_(cancelled),
        on_submitted_(std::move(on_submitted)),
        now_(now ? std::move(now) : [] { return absl::Now(); }),
        start_(now_()),
        location_(spec.location) {}

  absl::StatusOr<QueryJobOutcome> run() {
    if (!spec_.resume_job.empty()) {
      std::string id, location;
      ParseQueryJobRef(spec_.resume_job, &id, &location);
      if (location_.empty()) location_ = location;
      auto job = admin_.get_job(spec_.project, id, location_);
      if (job.ok()) {
        auto valid = checked(id, *std::move(job));
        if (!valid.ok()) return valid.status();
        spdlog::info("{}: waiting for query job {}, which the restored attempt submitted", kWho,
                     id);
        return finish(id, *std::move(valid), true);
      }
      if (job.status().code() != absl::StatusCode::kNotFound) {
        return fail(id, "looking up the restored", job.status());
      }
      spdlog::warn(
          "{}: BigQuery no longer knows query job {}, which the restored attempt "
          "submitted; running the query again",
          kWho, id);
      location_ = spec_.location;
    }
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
    const std::int64_t bucket =
        absl::ToUnixMillis(start_) / static_cast<std::int64_t>(spec_.reuse_within.count());
    // An attempt in the previous window may still be inside this one's reach.
    for (int probe = 0; probe < kMaxProbes; ++probe) {
      const std::string id = IdOf(bucket - 1, probe);
      auto job = admin_.get_job(spec_.project, id, location_);
      if (job.status().code() == absl::StatusCode::kNotFound) break;
      if (!job.ok()) return fail(id, "looking up", job.status());
      auto adopted = consider(id, *std::move(job));
      if (!adopted.ok()) return adopted.status();
      if (*adopted) return finish(id, **adopted, true);
    }
    for (int probe = 0; probe < kMaxProbes; ++probe) {
      const std::string id = IdOf(bucket, probe);
      bool existed = false;
      auto job = insert(id, &existed);
      if (!job.ok()) return job.status();
      if (!existed) return finish(id, *std::move(job), false);
      auto fetched = admin_.get_job(spec_.project, id, location_);
      if (!fetched.ok()) return fail(id, "fetching", fetched.status());
      auto adopted = consider(id, *std::move(fetched));
      if (!adopted.ok()) return adopted.status();
      if (*adopted) return finish(id, **adopted, true);
    }
    return absl::FailedPreconditionError(fmt::format(
        "{}: {} query job ids of this window ({}...) are all taken by failed jobs or jobs whose "
        "result is gone; rename the job or wait for the next window",
        kWho, kMaxProbes, IdOf(bucket, 0)));
  }

 private:
  std::string IdOf(std::int64_t bucket, int probe) const {
    const std::string base = ReusableQueryJobId(spec_, bucket);
    return probe == 0 ? base : fmt::format("{}_r{}", base, probe);
  }

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

  bool sleep(std::chrono::milliseconds d) const { return SleepUnlessCancelled(d, cancelled_); }

  absl::Status fail(const std::string& id, const char* doing, const absl::Status& s) const {
    return absl::Status(
        s.code(), fmt::format("{}: {} query job {} failed: {}", kWho, doing, id, Describe(s)));
  }

  // Keeps the location the service reported, for every later call about this job.
  absl::StatusOr<json> checked(const std::string& id, json job) {
    if (!job.is_object()) {
      return absl::InternalError(
          fmt::format("{}: the answer about query job {} is not a job resource", kWho, id));
    }
    if (location_.empty()) location_ = Str(Member(job, "jobReference"), "location");
    return job;
  }

  void count_submitted(const std::string& id) {
    if (on_submitted_) on_submitted_(id, location_);
    spdlog::info("{}: submitted query job {} in project {}{}", kWho, id, spec_.project,
                 location_.empty() ? "" : " at " + location_);
  }

  // jobs.insert, retried with the same id while it fails transiently. `existed`: the id was
  // taken by a job that is not this run's.
  absl::StatusOr<json> insert(const std::string& id, bool* existed) {
    connector::RecoveryBackoff backoff(connector::RecoveryOptions{});
    bool tried = false;
    for (;;) {
      auto job = admin_.insert_job(spec_.project, id, configuration(id), spec_.location);
      if (job.ok()) {
        auto ours = checked(id, *std::move(job));
        if (ours.ok()) count_submitted(id);
        return ours;
      }
      if (job.status().code() == absl::StatusCode::kAlreadyExists) {
        if (tried) {
          // An attempt whose answer was lost may have made it: this run's own when it runs this
          // query and was created after this run began.
          auto found = admin_.get_job(spec_.project, id, location_);
          if (!found.ok()) return fail(id, "fetching", found.status());
          auto job_found = checked(id, *std::move(found));
          if (!job_found.ok()) return job_found.status();
          const std::optional<absl::Time> created = CreatedAt(*job_found);
          if (created && *created >= start_ - kClockSlack &&
              Str(QueryConfig(*job_found), "query") == spec_.query) {
            count_submitted(id);
            return job_found;
          }
        }
        *existed = true;
        return json::object();
      }
      if (!TransientRestFailure(job.status())) return fail(id, "submitting", job.status());
      auto delay = backoff.next();
      if (!delay) return fail(id, "submitting", job.status());
      spdlog::warn("{}: submitting query job {} failed ({}); retrying with the same id", kWho, id,
                   Describe(job.status()));
      if (!sleep(*delay)) return cancelled(id);
      tried = true;
    }
  }

  // Whether an earlier attempt's job can be adopted: the finished job when it can, nullopt when
  // it is passed over (logged), an error when asking failed.
  absl::StatusOr<std::optional<json>> consider(const std::string& id, json job) {
    auto valid = checked(id, std::move(job));
    if (!valid.ok()) return valid.status();
    job = *std::move(valid);
    std::string why;
    if (const std::optional<absl::Time> created = CreatedAt(job);
        created && *created + absl::FromChrono(spec_.reuse_within) < now_()) {
      why = "was created before the reuse window began";
    }
    if (why.empty()) {
      auto done = await(id, std::move(job));
      if (!done.ok()) return done.status();
      job = *std::move(done);
      if (const json* e = ErrorOf(job)) {
        why = fmt::format("failed ({}: {})", Str(e, "reason"), Str(e, "message").substr(0, 300));
      } else {
        auto table = ResultTableOf(job, id);
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
      spdlog::info("{}: an earlier attempt's query job {} {}; passing over it", kWho, id, why);
      return std::optional<json>();
    }
    spdlog::info("{}: reusing query job {}, which an earlier attempt of {} submitted", kWho, id,
                 spec_.job_name);
    return std::optional<json>(std::move(job));
  }

  absl::StatusOr<json> await(const std::string& id, json job) {
    connector::RecoveryOptions poll;
    poll.initial_backoff = spec_.poll_initial;
    poll.max_backoff = std::max(spec_.poll_max, spec_.poll_initial);
    poll.max_attempts = INT_MAX;  // a query may run for hours
    connector::RecoveryBackoff poll_backoff(poll);
    connector::RecoveryBackoff errors(connector::RecoveryOptions{});
    while (!Done(job)) {
      if (!sleep(poll_backoff.next().value_or(poll.max_backoff))) return cancelled(id);
      auto got = admin_.get_job(spec_.project, id, location_);
      if (got.ok()) {
        auto valid = checked(id, *std::move(got));
        if (!valid.ok()) return valid.status();
        job = *std::move(valid);
        errors.reset();
        continue;
      }
      if (TransientRestFailure(got.status()) && errors.next()) {
        spdlog::warn("{}: polling query job {} failed ({}), attempt {}; polling again", kWho, id,
                     Describe(got.status()), errors.attempts());
        continue;
      }
      return fail(id, "polling", got.status());
    }
    return job;
  }

  // "projects/P/datasets/D/tables/T" of the job's configuration.query.destinationTable.
  static absl::StatusOr<TableRef> ResultTableOf(const json& job, const std::string& id) {
    const json* query = QueryConfig(job);
    const json* ref = query == nullptr ? nullptr : Member(*query, "destinationTable");
    TableRef t{Str(ref, "projectId"), Str(ref, "datasetId"), Str(ref, "tableId")};
    if (t.project.empty() || t.dataset.empty() || t.table.empty()) {
      return absl::FailedPreconditionError(fmt::format(
          "{}: the finished query job {} names no destination table (a query source reads the "
          "result of a SELECT)",
          kWho, id));
    }
    return t;
  }

  // A result table in the configured dataset expires a day after the job: set it unless set.
  void expire(const TableRef& table) const {
    auto live = admin_.get_table(table);
    if (live.ok() && Member(*live, "expirationTime") != nullptr) return;
    absl::Status st = live.status();
    if (live.ok()) {
      const json patch = {
          {"expirationTime", std::to_string(absl::ToUnixMillis(now_() + absl::Hours(24)))}};
      st = admin_.patch_table(table, patch, "").status();
    }
    if (!st.ok()) {
      spdlog::warn(
          "{}: setting a one-day expiration on the query result {} failed ({}); it "
          "stays until deleted",
          kWho, table.resource_name(), Describe(st));
    }
  }

  absl::StatusOr<QueryJobOutcome> finish(const std::string& id, json job, bool adopted) {
    auto done = await(id, std::move(job));
    if (!done.ok()) return done.status();
    if (const json* e = ErrorOf(*done)) {
      const std::string reason = Str(e, "reason");
      return absl::Status(CodeOfReason(reason),
                          fmt::format("{}: query job {} failed: {} (reason {})", kWho, id,
                                      Str(e, "message").substr(0, 2000), reason));
    }
    auto table = ResultTableOf(*done, id);
    if (!table.ok()) return table.status();
    if (!spec_.result_dataset.empty()) expire(*table);
    spdlog::info("{}: query job {} finished; its result is in {}", kWho, id,
                 table->resource_name());
    QueryJobOutcome out;
    out.job_id = id;
    out.location = location_;
    out.result_table = table->resource_name();
    out.reattached = adopted;
    return out;
  }

  const TableAdmin& admin_;
  const QueryJobSpec& spec_;
  const std::atomic<bool>* cancelled_;
  QueryJobSubmitted on_submitted_;
  std::function<absl::Time()> now_;
  const absl::Time start_;
  std::string location_;  // the job's location, once known
};

}  // namespace

bool TransientRestFailure(const absl::Status& s) {
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

bool SleepUnlessCancelled(std::chrono::milliseconds d, const std::atomic<bool>* cancelled) {
  const auto until = std::chrono::steady_clock::now() + d;
  for (;;) {
    if (cancelled != nullptr && cancelled->load()) return false;
    const auto left = until - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return true;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(100)));
  }
}

std::string ReusableQueryJobId(const QueryJobSpec& spec, std::int64_t bucket) {
  // Every field length-prefixed, so two different configurations never hash the same text.
  std::string text;
  for (const std::string* field :
       {&spec.job_name, &spec.query, &spec.project, &spec.location, &spec.result_dataset}) {
    text += fmt::format("{}:{}\n", field->size(), *field);
  }
  text += fmt::format("window_ms:{}\n", spec.reuse_within.count());
  return fmt::format("gcpstream_query_{}_{}", util::Sha256Hex(text).substr(0, 16), bucket);
}

std::string QueryJobRef(const std::string& job_id, const std::string& location) {
  return location.empty() ? job_id : job_id + "@" + location;
}

void ParseQueryJobRef(const std::string& ref, std::string* job_id, std::string* location) {
  const std::size_t at = ref.find('@');
  *job_id = ref.substr(0, at);
  *location = at == std::string::npos ? "" : ref.substr(at + 1);
}

absl::StatusOr<QueryJobOutcome> RunQueryJob(const TableAdmin& admin, const QueryJobSpec& spec,
                                            const std::atomic<bool>* cancelled,
                                            QueryJobSubmitted on_submitted,
                                            std::function<absl::Time()> now) {
  return Runner(admin, spec, cancelled, std::move(on_submitted), std::move(now)).run();
}

}  // namespace gcpstream::bigquery
