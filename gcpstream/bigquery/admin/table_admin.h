#ifndef GCPSTREAM_BIGQUERY_ADMIN_TABLE_ADMIN_H_
#define GCPSTREAM_BIGQUERY_ADMIN_TABLE_ADMIN_H_

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/oauth2_credentials.h"

namespace gcpstream::bigquery {

// Where production BigQuery's REST API listens.
inline constexpr char kBigQueryRestEndpoint[] = "https://bigquery.googleapis.com";

// The payload key under which a failed call keeps the v2 error's first `reason`
// ("rateLimitExceeded", "quotaExceeded", "duplicate", ...), so callers classify by the
// documented reason and never by message text.
inline constexpr char kBigQueryErrorReasonPayload[] = "gcpstream.bigquery/reason";
// The reason a failure carries; empty when none.
std::string ErrorReasonOf(const absl::Status& status);

// A table's identity ("projects/P/datasets/D/tables/T" is its resource_name()).
using TableRef = connector::BigQueryTableDestination;

// The BigQuery v2 REST calls the sink needs (tables.get, tables.insert, tables.patch,
// datasets.get, jobs.insert, jobs.get), JSON in and out as the REST reference shapes it. Each call
// is one HTTP exchange bounded by `timeout`; retries are the caller's (it knows which are safe).
//
// Failures map HTTP statuses onto gRPC codes as Google's APIs do — 400 INVALID_ARGUMENT,
// 401 UNAUTHENTICATED, 403 PERMISSION_DENIED (RESOURCE_EXHAUSTED when the reason is
// rateLimitExceeded or quotaExceeded), 404 NOT_FOUND, 409 ALREADY_EXISTS,
// 412 FAILED_PRECONDITION (a stale etag), 429 RESOURCE_EXHAUSTED, 500 INTERNAL,
// 503 UNAVAILABLE, 504 DEADLINE_EXCEEDED, no answer UNAVAILABLE — with the service's message
// and reason (ErrorReasonOf). Token failures are passed through. Thread-safe.
class TableAdmin {
 public:
  // `endpoint` is "https://bigquery.googleapis.com" or, for a fake, "http://host:port".
  TableAdmin(std::string endpoint, std::shared_ptr<connector::AccessTokenSource> credentials,
             std::chrono::milliseconds timeout = std::chrono::seconds(30));

  absl::StatusOr<nlohmann::json> get_dataset(const std::string& project,
                                             const std::string& dataset) const;
  absl::StatusOr<nlohmann::json> get_table(const TableRef& table) const;
  // `resource` is a tables resource (schema, timePartitioning, clustering, ...); its
  // tableReference is filled in from `table`. ALREADY_EXISTS when the table exists.
  absl::StatusOr<nlohmann::json> insert_table(const TableRef& table, nlohmann::json resource) const;
  // Changes only the fields present in `patch`; with `etag` not empty the change applies only
  // if the table's etag still matches (FAILED_PRECONDITION otherwise).
  absl::StatusOr<nlohmann::json> patch_table(const TableRef& table, const nlohmann::json& patch,
                                             const std::string& etag) const;

  // jobs.insert of a job with the caller's id (letters, digits, '_' and '-', at most 1,024:
  // the jobs.insert reference) and `configuration` (a JobConfiguration: {"load": ...} etc.).
  // The job resource as the service answers it. ALREADY_EXISTS (reason "duplicate") when the
  // project already has a job with that id: the caller fetches it with get_job and decides.
  // INVALID_ARGUMENT for an id outside that charset, without calling.
  // `location` (may be empty) goes in jobReference.location: outside the US and EU
  // multi-regions a job is found only with its location.
  absl::StatusOr<nlohmann::json> insert_job(const std::string& project, const std::string& job_id,
                                            const nlohmann::json& configuration,
                                            const std::string& location = "") const;
  // jobs.get; `location` may be empty. NOT_FOUND when there is no such job.
  absl::StatusOr<nlohmann::json> get_job(const std::string& project, const std::string& job_id,
                                         const std::string& location) const;

 private:
  absl::StatusOr<nlohmann::json> call(const std::string& method, const std::string& path,
                                      const nlohmann::json* body, const std::string& etag) const;

  std::string endpoint_;
  std::shared_ptr<connector::AccessTokenSource> credentials_;
  std::chrono::milliseconds timeout_;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_ADMIN_TABLE_ADMIN_H_
