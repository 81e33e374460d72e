#ifndef GCPSTREAM_TASKS_SINK_TASK_FIELDS_H_
#define GCPSTREAM_TASKS_SINK_TASK_FIELDS_H_

#include <chrono>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "google/cloud/tasks/v2/task.pb.h"

// Checks of task fields against the documented Cloud Tasks v2 limits (the Task, HttpRequest and
// AppEngineHttpRequest references). Each returns INVALID_ARGUMENT naming the field and the rule.
namespace gcpstream::tasks {

// The maximum task size, per the CreateTask reference ("The maximum task size is 100KB"). The
// quotas page says 1 MiB; the smaller figure is the one to design against.
inline constexpr std::size_t kMaxTaskBytes = 100 * 1024;
// Both URL forms are at most 2083 characters.
inline constexpr std::size_t kMaxUrlLength = 2083;
// schedule_time may be at most 30 days ahead.
inline constexpr absl::Duration kMaxScheduleAhead = absl::Hours(24 * 30);

// An absolute http:// or https:// URL with a host, of at most 2083 characters.
absl::Status ValidateHttpUrl(std::string_view url);
// Empty, or starting with '/', with no space and no fragment, at most 2083 characters.
absl::Status ValidateRelativeUri(std::string_view uri);
// Host, Content-Length, X-Google-* and X-AppEngine-* belong to Cloud Tasks (case-insensitive).
absl::Status ValidateAppEngineHeader(std::string_view name);
// An HTTP header name is a token (RFC 9110, section 5.1: letters, digits and
// !#$%&'*+-.^_`|~, at least one).
absl::Status ValidateHeaderName(std::string_view name);
// A header value holds no CR, LF or NUL (RFC 9110, section 5.5): such bytes would split or end
// the request the task makes.
absl::Status ValidateHeaderValue(std::string_view name, std::string_view value);
// HTTP targets: 15 s to 30 min; App Engine targets: 15 s to 24 h.
absl::Status ValidateDispatchDeadline(std::chrono::milliseconds deadline, bool app_engine);
// Whether the method's request carries a body: POST, PUT, PATCH for HTTP targets; POST and PUT
// for App Engine targets.
bool HttpMethodCarriesBody(google::cloud::tasks::v2::HttpMethod method, bool app_engine);

void SetTimestamp(absl::Time when, google::protobuf::Timestamp& out);
void SetDuration(std::chrono::milliseconds d, google::protobuf::Duration& out);

}  // namespace gcpstream::tasks

#endif  // GCPSTREAM_TASKS_SINK_TASK_FIELDS_H_
