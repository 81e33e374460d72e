#include "gcpstream/bigquery/client/status_text.h"

namespace gcpstream::bigquery {

std::string Describe(const absl::Status& status) {
  return absl::StatusCodeToString(status.code()) + ": " + std::string(status.message());
}

}  // namespace gcpstream::bigquery
