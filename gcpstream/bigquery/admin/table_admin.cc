#include "gcpstream/bigquery/admin/table_admin.h"

#include <fmt/format.h>
#include <httplib.h>

#include "absl/strings/cord.h"
#include "gcpstream/connector/http_status.h"
#include "gcpstream/util/json.h"

namespace gcpstream::bigquery {
namespace {

constexpr std::size_t kMaxJsonDepth = 64;

}  // namespace

std::string ErrorReasonOf(const absl::Status& status) {
  auto payload = status.GetPayload(kBigQueryErrorReasonPayload);
  return payload ? std::string(*payload) : std::string();
}

TableAdmin::TableAdmin(std::string endpoint,
                       std::shared_ptr<connector::AccessTokenSource> credentials,
                       std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)), credentials_(std::move(credentials)), timeout_(timeout) {}

absl::StatusOr<nlohmann::json> TableAdmin::call(const std::string& method, const std::string& path,
                                                const nlohmann::json* body,
                                                const std::string& etag) const {
  httplib::Headers headers;
  auto token = credentials_->token();
  if (!token.ok()) return token.status();
  if (!token->empty()) headers.emplace("Authorization", "Bearer " + *token);
  if (!etag.empty()) headers.emplace("If-Match", etag);
  // httplib refuses a URL it cannot use by throwing; the endpoint is validated by the builders,
  // this keeps a caller that skipped that from aborting the process.
  std::unique_ptr<httplib::Client> owned;
  try {
    owned = std::make_unique<httplib::Client>(endpoint_);
  } catch (const std::exception&) {
    return absl::InvalidArgumentError(
        fmt::format("BigQuery REST endpoint \"{}\" is not an http(s) URL", endpoint_));
  }
  httplib::Client& client = *owned;
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout_);
  client.set_connection_timeout(secs);
  client.set_read_timeout(secs);
  client.set_write_timeout(secs);
  const std::string payload = body ? body->dump() : std::string();
  httplib::Result result = method == "GET" ? client.Get(path, headers)
                           : method == "POST"
                               ? client.Post(path, headers, payload, "application/json")
                               : client.Patch(path, headers, payload, "application/json");
  if (!result) {
    return absl::UnavailableError(fmt::format("BigQuery {} {}{}: no answer ({})", method, endpoint_,
                                              path, httplib::to_string(result.error())));
  }
  auto json = util::ParseJsonBounded(result->body, kMaxJsonDepth);
  if (result->status >= 200 && result->status < 300) {
    if (!json.ok()) {
      return absl::InternalError(
          fmt::format("BigQuery {} {}: the answer is not JSON", method, path));
    }
    return *json;
  }
  return connector::RestErrorStatus(result->status, result->body,
                                    fmt::format("BigQuery {} {}", method, path),
                                    kBigQueryErrorReasonPayload);
}

absl::StatusOr<nlohmann::json> TableAdmin::get_dataset(const std::string& project,
                                                       const std::string& dataset) const {
  return call("GET", fmt::format("/bigquery/v2/projects/{}/datasets/{}", project, dataset), nullptr,
              "");
}

absl::StatusOr<nlohmann::json> TableAdmin::get_table(const TableRef& t) const {
  return call(
      "GET",
      fmt::format("/bigquery/v2/projects/{}/datasets/{}/tables/{}", t.project, t.dataset, t.table),
      nullptr, "");
}

absl::StatusOr<nlohmann::json> TableAdmin::insert_table(const TableRef& t,
                                                        nlohmann::json resource) const {
  resource["tableReference"] = {
      {"projectId", t.project}, {"datasetId", t.dataset}, {"tableId", t.table}};
  return call("POST",
              fmt::format("/bigquery/v2/projects/{}/datasets/{}/tables", t.project, t.dataset),
              &resource, "");
}

namespace {
bool ValidJobId(const std::string& id) {
  if (id.empty() || id.size() > 1024) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}
}  // namespace

absl::StatusOr<nlohmann::json> TableAdmin::insert_job(const std::string& project,
                                                      const std::string& job_id,
                                                      const nlohmann::json& configuration,
                                                      const std::string& location) const {
  if (!ValidJobId(job_id)) {
    return absl::InvalidArgumentError(
        "a BigQuery job id is 1 to 1,024 letters, digits, underscores or dashes");
  }
  nlohmann::json job = {{"jobReference", {{"projectId", project}, {"jobId", job_id}}},
                        {"configuration", configuration}};
  if (!location.empty()) job["jobReference"]["location"] = location;
  return call("POST", fmt::format("/bigquery/v2/projects/{}/jobs", project), &job, "");
}

absl::StatusOr<nlohmann::json> TableAdmin::get_job(const std::string& project,
                                                   const std::string& job_id,
                                                   const std::string& location) const {
  if (!ValidJobId(job_id)) {
    return absl::InvalidArgumentError(
        "a BigQuery job id is 1 to 1,024 letters, digits, underscores or dashes");
  }
  std::string path = fmt::format("/bigquery/v2/projects/{}/jobs/{}", project, job_id);
  if (!location.empty()) {
    bool plain = true;
    for (char c : location)
      plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '-');
    if (!plain) return absl::InvalidArgumentError("a BigQuery location is letters, digits and '-'");
    path += "?location=" + location;
  }
  return call("GET", path, nullptr, "");
}

absl::StatusOr<nlohmann::json> TableAdmin::patch_table(const TableRef& t,
                                                       const nlohmann::json& patch,
                                                       const std::string& etag) const {
  return call(
      "PATCH",
      fmt::format("/bigquery/v2/projects/{}/datasets/{}/tables/{}", t.project, t.dataset, t.table),
      &patch, etag);
}

}  // namespace gcpstream::bigquery
