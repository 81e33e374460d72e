#ifndef GCPSTREAM_CONNECTOR_OAUTH2_CREDENTIALS_H_
#define GCPSTREAM_CONNECTOR_OAUTH2_CREDENTIALS_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gcpstream/connector/client_options.h"

namespace gcpstream::connector {

// OAuth2 access tokens for Google's REST APIs (BigQuery v2, Cloud Storage JSON), where gRPC's
// own credentials do not reach. gRPC clients keep using CreateChannel.
//
// A source caches its token and fetches a new one when less than `refresh_margin` of its life
// remains, so a request never leaves with a token about to expire. Thread-safe: concurrent
// callers share one fetch. Errors: UNAVAILABLE when the token endpoint could not be reached or
// answered 5xx/429 (retry later), UNAUTHENTICATED when it refused the credential (4xx), and
// FAILED_PRECONDITION for an unusable credential file. No error or log line ever holds a token,
// a private key, a refresh token, a client secret or a key file's path.
class AccessTokenSource {
 public:
  virtual ~AccessTokenSource() = default;
  // The token to send as "Authorization: Bearer <token>"; empty for the no-credentials source
  // (an emulator or a fake), whose callers send no Authorization header.
  virtual absl::StatusOr<std::string> token() = 0;
};

struct OAuth2Options {
  // Requested for service-account tokens.
  std::string scope = "https://www.googleapis.com/auth/cloud-platform";
  // Renew this long before expiry. Google's client libraries renew a few minutes ahead too.
  absl::Duration refresh_margin = absl::Minutes(5);
  // Per HTTP exchange with a token endpoint.
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
  // "http(s)://host[:port]" of the metadata server [$GCE_METADATA_HOST, else
  // http://metadata.google.internal].
  std::string metadata_server;
  // Token endpoint for authorized-user credentials without a "token_uri"
  // [https://oauth2.googleapis.com/token].
  std::string default_token_uri = "https://oauth2.googleapis.com/token";
  // Now [absl::Now]; tests move it.
  std::function<absl::Time()> clock;
};

// A service account's JSON key (its "private_key", "client_email" and "token_uri"): a JWT
// signed with RS256 (RFC 7523) is exchanged for an access token at token_uri.
absl::StatusOr<std::shared_ptr<AccessTokenSource>> MakeServiceAccountTokenSource(
    const std::string& key_json, OAuth2Options options = {});
// A gcloud user credential ("type": "authorized_user": client_id, client_secret,
// refresh_token): the refresh-token grant (RFC 6749 section 6).
absl::StatusOr<std::shared_ptr<AccessTokenSource>> MakeAuthorizedUserTokenSource(
    const std::string& credential_json, OAuth2Options options = {});
// The metadata server's token for the attached service account
// (/computeMetadata/v1/instance/service-accounts/default/token, "Metadata-Flavor: Google").
std::shared_ptr<AccessTokenSource> MakeMetadataTokenSource(OAuth2Options options = {});
// No credentials: for emulators and fakes.
std::shared_ptr<AccessTokenSource> MakeNoCredentials();

// The source `options` call for: none for an emulator endpoint; the key file's credential
// (a service-account key or an authorized-user credential, by its "type"); otherwise
// Application Default Credentials in their documented order — the file named by
// $GOOGLE_APPLICATION_CREDENTIALS, then gcloud's
// ~/.config/gcloud/application_default_credentials.json, then the metadata server.
absl::StatusOr<std::shared_ptr<AccessTokenSource>> MakeAccessTokenSource(
    const ClientOptions& client, OAuth2Options options = {});

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_OAUTH2_CREDENTIALS_H_
