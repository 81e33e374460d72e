#include "gcpstream/tasks/sink/task_fields.h"

#include <fmt/format.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::tasks {

absl::Status ValidateHttpUrl(std::string_view url) {
  if (!url.starts_with("http://") && !url.starts_with("https://")) {
    return absl::InvalidArgumentError(
        fmt::format("a Cloud Tasks HTTP target URL must start with http:// or https://; got '{}'",
                    url.substr(0, 200)));
  }
  if (url.size() > kMaxUrlLength) {
    return absl::InvalidArgumentError(
        fmt::format("a Cloud Tasks HTTP target URL is at most {} characters; got {}", kMaxUrlLength,
                    url.size()));
  }
  const std::string_view rest = url.substr(url.find("//") + 2);
  if (rest.empty() || rest.front() == '/' || rest.front() == '?' || rest.front() == '#') {
    return absl::InvalidArgumentError(
        fmt::format("a Cloud Tasks HTTP target URL needs a host; got '{}'", url.substr(0, 200)));
  }
  if (url.find_first_of(" \t\r\n") != std::string_view::npos) {
    return absl::InvalidArgumentError("a Cloud Tasks HTTP target URL must not contain whitespace");
  }
  return absl::OkStatus();
}

absl::Status ValidateRelativeUri(std::string_view uri) {
  if (!uri.empty() && uri.front() != '/') {
    return absl::InvalidArgumentError(
        fmt::format("an App Engine relative URI must be empty or start with '/'; got '{}'",
                    uri.substr(0, 200)));
  }
  if (uri.size() > kMaxUrlLength) {
    return absl::InvalidArgumentError(fmt::format(
        "an App Engine relative URI is at most {} characters; got {}", kMaxUrlLength, uri.size()));
  }
  if (uri.find_first_of(" \t\r\n#") != std::string_view::npos) {
    return absl::InvalidArgumentError(
        "an App Engine relative URI holds a path and query only: no whitespace, no fragment");
  }
  return absl::OkStatus();
}

absl::Status ValidateAppEngineHeader(std::string_view name) {
  std::string lower(name);
  absl::AsciiStrToLower(&lower);
  if (lower == "host" || lower == "content-length" || lower.starts_with("x-google-") ||
      lower.starts_with("x-appengine-")) {
    return absl::InvalidArgumentError(fmt::format(
        "header '{}' is set by Cloud Tasks for App Engine tasks and cannot be given (Host, "
        "Content-Length, X-Google-*, X-AppEngine-*)",
        name));
  }
  return absl::OkStatus();
}

absl::Status ValidateHeaderName(std::string_view name) {
  static constexpr std::string_view kTokenChars = "!#$%&'*+-.^_`|~";
  const bool token = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           kTokenChars.find(c) != std::string_view::npos;
  });
  if (!token) {
    return absl::InvalidArgumentError(
        fmt::format("header name '{}' is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~)",
                    name.substr(0, 200)));
  }
  return absl::OkStatus();
}

absl::Status ValidateHeaderValue(std::string_view name, std::string_view value) {
  if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos) {
    return absl::InvalidArgumentError(
        fmt::format("the value of header '{}' holds CR, LF or NUL, which would split the request",
                    name.substr(0, 200)));
  }
  return absl::OkStatus();
}

absl::Status ValidateDispatchDeadline(std::chrono::milliseconds deadline, bool app_engine) {
  const auto max = app_engine ? std::chrono::milliseconds(std::chrono::hours(24))
                              : std::chrono::milliseconds(std::chrono::minutes(30));
  if (deadline < std::chrono::seconds(15) || deadline > max) {
    return absl::InvalidArgumentError(fmt::format(
        "dispatch_deadline must be between 15 s and {} for {} targets; got {} ms",
        app_engine ? "24 h" : "30 min", app_engine ? "App Engine" : "HTTP", deadline.count()));
  }
  return absl::OkStatus();
}

bool HttpMethodCarriesBody(google::cloud::tasks::v2::HttpMethod method, bool app_engine) {
  using google::cloud::tasks::v2::HttpMethod;
  switch (method) {
    case HttpMethod::HTTP_METHOD_UNSPECIFIED:  // the service's default is POST
    case HttpMethod::POST:
    case HttpMethod::PUT:
      return true;
    case HttpMethod::PATCH:
      return !app_engine;
    default:
      return false;
  }
}

void SetTimestamp(absl::Time when, google::protobuf::Timestamp& out) {
  const absl::Duration since = when - absl::UnixEpoch();
  const std::int64_t seconds = absl::ToInt64Seconds(since);
  out.set_seconds(seconds);
  out.set_nanos(static_cast<int>(absl::ToInt64Nanoseconds(since - absl::Seconds(seconds))));
}

void SetDuration(std::chrono::milliseconds d, google::protobuf::Duration& out) {
  out.set_seconds(d.count() / 1000);
  out.set_nanos(static_cast<int>((d.count() % 1000) * 1'000'000));
}

}  // namespace gcpstream::tasks
