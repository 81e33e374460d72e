#include "gcpstream/bigquery/admin/table_admin_factory.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/connector/oauth2_credentials.h"

namespace gcpstream::bigquery {

absl::Status ValidateRestEndpoint(const std::string& url) {
  static const RE2 kUrl(R"((?:http://[^/\s:@]+:(\d{1,5})|https://[^/\s:@]+(?::(\d{1,5}))?))");
  std::string http_port, https_port;
  if (!RE2::FullMatch(url, kUrl, &http_port, &https_port)) {
    return absl::InvalidArgumentError(fmt::format(
        "BigQuery REST endpoint \"{}\" is not http://host:port (or https://host[:port])", url));
  }
  for (const std::string& port : {http_port, https_port}) {
    if (!port.empty() && (std::stoi(port) < 1 || std::stoi(port) > 65535)) {
      return absl::InvalidArgumentError(
          fmt::format("BigQuery REST endpoint \"{}\": port {} is not 1..65535", url, port));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<TableAdmin>> MakeTableAdmin(
    const connector::ClientOptions& client, const std::optional<std::string>& emulator_rest) {
  if (emulator_rest) {
    return std::make_shared<TableAdmin>(*emulator_rest, connector::MakeNoCredentials());
  }
  GCP_ASSIGN_OR_RETURN(std::shared_ptr<connector::AccessTokenSource> credentials,
                       connector::MakeAccessTokenSource(client));
  return std::make_shared<TableAdmin>(kBigQueryRestEndpoint, std::move(credentials));
}

}  // namespace gcpstream::bigquery
