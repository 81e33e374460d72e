#ifndef GCPSTREAM_BIGQUERY_CLIENT_STATUS_TEXT_H_
#define GCPSTREAM_BIGQUERY_CLIENT_STATUS_TEXT_H_

#include <string>

#include "absl/status/status.h"

namespace gcpstream::bigquery {

// "CODE: message", without the payloads (absl::Status::ToString prints their bytes): for logs
// and for the messages that wrap a service's failure.
std::string Describe(const absl::Status& status);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_CLIENT_STATUS_TEXT_H_
