#ifndef GCPSTREAM_CONNECTOR_HTTP_STATUS_H_
#define GCPSTREAM_CONNECTOR_HTTP_STATUS_H_

#include <string>

#include "absl/status/status.h"

namespace gcpstream::connector {

// The gRPC code of a Google REST API's HTTP status, as Google's APIs map them ("HTTP mapping"
// in google.rpc.Code): 400 INVALID_ARGUMENT, 401 UNAUTHENTICATED, 403 PERMISSION_DENIED
// (RESOURCE_EXHAUSTED when the error's first reason is rateLimitExceeded, userRateLimitExceeded
// or quotaExceeded), 404 NOT_FOUND, 408 UNAVAILABLE (retryable), 409 ALREADY_EXISTS, 412
// FAILED_PRECONDITION, 429 RESOURCE_EXHAUSTED, 500 INTERNAL, 503 UNAVAILABLE, 504
// DEADLINE_EXCEEDED, any other 5xx UNAVAILABLE, anything else UNKNOWN.
absl::StatusCode CodeForHttpStatus(int http, const std::string& reason);

// The failure a Google REST API answered with HTTP status `http` and `body`: the code by
// CodeForHttpStatus, the message "<what>: <error.message> (reason <r>)" taken from the JSON
// error body ({"error": {"message": ..., "errors": [{"reason": ...}]}}), "HTTP <n>" when the
// body says nothing usable; the service's message is cut at 2,000 bytes. The first reason is also
// kept as payload `reason_payload` (when not null), so callers classify by the documented reason,
// never by message text.
absl::Status RestErrorStatus(int http, const std::string& body, const std::string& what,
                             const char* reason_payload);

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_HTTP_STATUS_H_
