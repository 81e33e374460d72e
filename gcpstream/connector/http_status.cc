#include "gcpstream/connector/http_status.h"

#include <fmt/format.h>

#include "absl/strings/cord.h"
#include "gcpstream/util/json.h"
#include "gcpstream/util/utf8.h"

namespace gcpstream::connector {

absl::StatusCode CodeForHttpStatus(int http, const std::string& reason) {
  switch (http) {
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return reason == "rateLimitExceeded" || reason == "quotaExceeded" ||
                     reason == "userRateLimitExceeded"
                 ? absl::StatusCode::kResourceExhausted
                 : absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 408:  // a request timeout: worth another attempt
      return absl::StatusCode::kUnavailable;
    case 409:
      return absl::StatusCode::kAlreadyExists;
    case 412:
      return absl::StatusCode::kFailedPrecondition;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 500:
      return absl::StatusCode::kInternal;
    case 503:
      return absl::StatusCode::kUnavailable;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      return http >= 500 ? absl::StatusCode::kUnavailable : absl::StatusCode::kUnknown;
  }
}

absl::Status RestErrorStatus(int http, const std::string& body, const std::string& what,
                             const char* reason_payload) {
  constexpr std::size_t kMaxJsonDepth = 64;
  auto json = util::ParseJsonBounded(body, kMaxJsonDepth);
  std::string message = fmt::format("HTTP {}", http);
  std::string reason;
  if (json.ok() && json->is_object() && json->contains("error")) {
    const auto& error = (*json)["error"];
    if (error.is_object() && error.contains("message") && error["message"].is_string()) {
      message = util::ToValidUtf8(error["message"].get<std::string>(), 2000);
    }
    if (error.is_object() && error.contains("errors") && error["errors"].is_array() &&
        !error["errors"].empty() && error["errors"][0].is_object() &&
        error["errors"][0].contains("reason") && error["errors"][0]["reason"].is_string()) {
      reason = util::ToValidUtf8(error["errors"][0]["reason"].get<std::string>(), 100);
    }
  }
  absl::Status status(
      CodeForHttpStatus(http, reason),
      fmt::format("{}: {}{}", what, message, reason.empty() ? "" : " (reason " + reason + ")"));
  if (!reason.empty() && reason_payload != nullptr) {
    status.SetPayload(reason_payload, absl::Cord(reason));
  }
  return status;
}

}  // namespace gcpstream::connector
