#ifndef GCPSTREAM_BIGQUERY_ADMIN_TABLE_ADMIN_FACTORY_H_
#define GCPSTREAM_BIGQUERY_ADMIN_TABLE_ADMIN_FACTORY_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/bigquery/admin/table_admin.h"
#include "gcpstream/connector/client_options.h"

namespace gcpstream::bigquery {

// INVALID_ARGUMENT unless `url` is "http://host:port" or "https://host[:port]" (no path).
absl::Status ValidateRestEndpoint(const std::string& url);

// The REST client of a sink or a source: the production endpoint with the client's credentials
// (read now: a missing key file fails here), or `emulator_rest` (plaintext, no credentials) when
// set. Errors are the credential loader's, with their codes.
absl::StatusOr<std::shared_ptr<TableAdmin>> MakeTableAdmin(
    const connector::ClientOptions& client, const std::optional<std::string>& emulator_rest);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_ADMIN_TABLE_ADMIN_FACTORY_H_
