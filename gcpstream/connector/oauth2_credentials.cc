#include "gcpstream/connector/oauth2_credentials.h"

#include <fmt/format.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/escaping.h"
#include "gcpstream/util/json.h"

namespace gcpstream::connector {
namespace {

constexpr std::size_t kMaxJsonDepth = 16;
// A service-account assertion lives an hour, the most RFC 7523 exchanges at Google accept.
constexpr absl::Duration kAssertionLifetime = absl::Hours(1);

absl::Time Now(const OAuth2Options& o) { return o.clock ? o.clock() : absl::Now(); }

struct Token {
  std::string value;
  absl::Time expires;
};

// "scheme://host[:port]" and the path of a URL.
absl::StatusOr<std::pair<std::string, std::string>> SplitUrl(const std::string& url) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) {
    return absl::FailedPreconditionError("a token endpoint is not an http(s) URL");
  }
  const auto path = url.find('/', scheme + 3);
  if (path == std::string::npos) return std::make_pair(url, std::string("/"));
  return std::make_pair(url.substr(0, path), url.substr(path));
}

// The token an endpoint answered: {"access_token", "expires_in"}. `who` names the credential
// kind in errors; nothing the endpoint returned beyond its error code is repeated.
absl::StatusOr<Token> ParseTokenResponse(const httplib::Result& result, const std::string& who,
                                         const OAuth2Options& options) {
  if (!result) {
    return absl::UnavailableError(fmt::format("{}: the token endpoint could not be reached ({})",
                                              who, httplib::to_string(result.error())));
  }
  const int http = result->status;
  auto body = util::ParseJsonBounded(result->body, kMaxJsonDepth);
  if (http != 200) {
    std::string error = "no error code";
    if (body.ok() && body->is_object() && body->contains("error") && (*body)["error"].is_string()) {
      error = (*body)["error"].get<std::string>();
    }
    const std::string message =
        fmt::format("{}: the token endpoint answered HTTP {} ({})", who, http, error);
    if (http == 429 || http >= 500) return absl::UnavailableError(message);
    return absl::UnauthenticatedError(message);
  }
  if (!body.ok() || !body->is_object() || !body->contains("access_token") ||
      !(*body)["access_token"].is_string()) {
    return absl::UnavailableError(
        fmt::format("{}: the token endpoint's answer holds no access_token", who));
  }
  Token t;
  t.value = (*body)["access_token"].get<std::string>();
  std::int64_t seconds = 3600;
  if (body->contains("expires_in") && (*body)["expires_in"].is_number_integer()) {
    seconds = (*body)["expires_in"].get<std::int64_t>();
  }
  t.expires = Now(options) + absl::Seconds(seconds);
  return t;
}

// The caching shared by every kind: `fetch` runs under the lock, so concurrent callers share
// one exchange.
class CachingSource : public AccessTokenSource {
 public:
  explicit CachingSource(OAuth2Options options) : options_(std::move(options)) {}
  absl::StatusOr<std::string> token() final {
    std::lock_guard lock(mu_);
    if (!cached_.value.empty() && Now(options_) + options_.refresh_margin < cached_.expires) {
      return cached_.value;
    }
    auto fresh = fetch();
    if (!fresh.ok()) return fresh.status();
    cached_ = std::move(*fresh);
    return cached_.value;
  }

 protected:
  virtual absl::StatusOr<Token> fetch() = 0;
  absl::StatusOr<Token> post_form(const std::string& url, const httplib::Params& form,
                                  const std::string& who) {
    auto split = SplitUrl(url);
    if (!split.ok()) return split.status();
    std::unique_ptr<httplib::Client> client;
    try {  // httplib throws for a scheme it cannot use (a key file's token_uri is input)
      client = std::make_unique<httplib::Client>(split->first);
    } catch (const std::exception&) {
      return absl::FailedPreconditionError(
          fmt::format("{}: the token endpoint is not an http(s) URL", who));
    }
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(options_.timeout);
    client->set_connection_timeout(secs);
    client->set_read_timeout(secs);
    return ParseTokenResponse(client->Post(split->second, form), who, options_);
  }
  OAuth2Options options_;

 private:
  std::mutex mu_;
  Token cached_;
};

std::string Base64Url(std::string_view bytes) {
  std::string out;
  absl::WebSafeBase64Escape(absl::string_view(bytes.data(), bytes.size()), &out);
  return out;
}

class ServiceAccountSource final : public CachingSource {
 public:
  ServiceAccountSource(OAuth2Options options, std::string email, std::string key_id,
                       std::string token_uri, std::shared_ptr<EVP_PKEY> key)
      : CachingSource(std::move(options)),
        email_(std::move(email)),
        key_id_(std::move(key_id)),
        token_uri_(std::move(token_uri)),
        key_(std::move(key)) {}

 private:
  absl::StatusOr<Token> fetch() override {
    const std::int64_t now = absl::ToUnixSeconds(Now(options_));
    nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
    if (!key_id_.empty()) header["kid"] = key_id_;
    const nlohmann::json claims = {{"iss", email_},
                                   {"scope", options_.scope},
                                   {"aud", token_uri_},
                                   {"iat", now},
                                   {"exp", now + absl::ToInt64Seconds(kAssertionLifetime)}};
    const std::string signing_input = Base64Url(header.dump()) + "." + Base64Url(claims.dump());
    auto signature = sign(signing_input);
    if (!signature.ok()) return signature.status();
    return post_form(token_uri_,
                     {{"grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"},
                      {"assertion", signing_input + "." + Base64Url(*signature)}},
                     "service account credentials");
  }

  absl::StatusOr<std::string> sign(const std::string& input) const {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    std::size_t length = 0;
    if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_.get()) != 1 ||
        EVP_DigestSign(ctx.get(), nullptr, &length,
                       reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1) {
      return absl::FailedPreconditionError(
          "service account credentials: the private key cannot sign (is it an RSA key?)");
    }
    std::string signature(length, '\0');
    if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &length,
                       reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1) {
      return absl::FailedPreconditionError(
          "service account credentials: signing the token request failed");
    }
    signature.resize(length);
    return signature;
  }

  std::string email_;
  std::string key_id_;
  std::string token_uri_;
  std::shared_ptr<EVP_PKEY> key_;
};

class AuthorizedUserSource final : public CachingSource {
 public:
  AuthorizedUserSource(OAuth2Options options, httplib::Params form, std::string token_uri)
      : CachingSource(std::move(options)),
        form_(std::move(form)),
        token_uri_(std::move(token_uri)) {}

 private:
  absl::StatusOr<Token> fetch() override {
    return post_form(token_uri_, form_, "authorized user credentials");
  }
  httplib::Params form_;
  std::string token_uri_;
};

class MetadataSource final : public CachingSource {
 public:
  explicit MetadataSource(OAuth2Options options) : CachingSource(std::move(options)) {
    if (options_.metadata_server.empty()) {
      const char* host = std::getenv("GCE_METADATA_HOST");
      options_.metadata_server = host != nullptr && *host != '\0'
                                     ? std::string("http://") + host
                                     : "http://metadata.google.internal";
    }
  }

 private:
  absl::StatusOr<Token> fetch() override {
    std::unique_ptr<httplib::Client> owned;
    try {  // $GCE_METADATA_HOST is input: httplib throws for what it cannot use
      owned = std::make_unique<httplib::Client>(options_.metadata_server);
    } catch (const std::exception&) {
      return absl::FailedPreconditionError("the metadata server address is not usable");
    }
    httplib::Client& client = *owned;
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(options_.timeout);
    client.set_connection_timeout(secs);
    client.set_read_timeout(secs);
    return ParseTokenResponse(
        client.Get("/computeMetadata/v1/instance/service-accounts/default/token",
                   {{"Metadata-Flavor", "Google"}}),
        "the metadata server", options_);
  }
};

class NoCredentials final : public AccessTokenSource {
 public:
  absl::StatusOr<std::string> token() override { return std::string(); }
};

absl::StatusOr<nlohmann::json> ParseCredential(const std::string& text, const char* who) {
  auto json = util::ParseJsonBounded(text, kMaxJsonDepth);
  if (!json.ok() || !json->is_object()) {
    return absl::FailedPreconditionError(fmt::format("{}: not a JSON object", who));
  }
  return json;
}

std::string Field(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

absl::StatusOr<std::shared_ptr<AccessTokenSource>> FromCredentialText(const std::string& text,
                                                                      OAuth2Options options) {
  auto json = ParseCredential(text, "the credential file");
  if (!json.ok()) return json.status();
  const std::string type = Field(*json, "type");
  if (type == "service_account") return MakeServiceAccountTokenSource(text, std::move(options));
  if (type == "authorized_user") return MakeAuthorizedUserTokenSource(text, std::move(options));
  return absl::FailedPreconditionError(fmt::format(
      "the credential file's type \"{}\" is not supported (service_account, authorized_user)",
      type));
}

absl::StatusOr<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::FailedPreconditionError("the credential file could not be read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<AccessTokenSource>> MakeServiceAccountTokenSource(
    const std::string& key_json, OAuth2Options options) {
  auto json = ParseCredential(key_json, "the service account key");
  if (!json.ok()) return json.status();
  const std::string email = Field(*json, "client_email");
  const std::string pem = Field(*json, "private_key");
  std::string token_uri = Field(*json, "token_uri");
  if (token_uri.empty()) token_uri = options.default_token_uri;
  if (email.empty() || pem.empty()) {
    return absl::FailedPreconditionError(
        "the service account key lacks \"client_email\" or \"private_key\"");
  }
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  EVP_PKEY* raw = bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr;
  if (raw == nullptr) {
    return absl::FailedPreconditionError(
        "the service account key's \"private_key\" does not decode as a PEM private key");
  }
  std::shared_ptr<EVP_PKEY> key(raw, EVP_PKEY_free);
  return std::shared_ptr<AccessTokenSource>(std::make_shared<ServiceAccountSource>(
      std::move(options), email, Field(*json, "private_key_id"), token_uri, std::move(key)));
}

absl::StatusOr<std::shared_ptr<AccessTokenSource>> MakeAuthorizedUserTokenSource(
    const std::string& credential_json, OAuth2Options options) {
  auto json = ParseCredential(credential_json, "the authorized user credential");
  if (!json.ok()) return json.status();
  httplib::Params form{{"grant_type", "refresh_token"},
                       {"client_id", Field(*json, "client_id")},
                       {"client_secret", Field(*json, "client_secret")},
                       {"refresh_token", Field(*json, "refresh_token")}};
  for (const auto& [name, value] : form) {
    if (value.empty()) {
      return absl::FailedPreconditionError(
          fmt::format("the authorized user credential lacks \"{}\"", name));
    }
  }
  std::string token_uri = Field(*json, "token_uri");
  if (token_uri.empty()) token_uri = options.default_token_uri;
  return std::shared_ptr<AccessTokenSource>(
      std::make_shared<AuthorizedUserSource>(std::move(options), std::move(form), token_uri));
}

std::shared_ptr<AccessTokenSource> MakeMetadataTokenSource(OAuth2Options options) {
  return std::make_shared<MetadataSource>(std::move(options));
}

std::shared_ptr<AccessTokenSource> MakeNoCredentials() { return std::make_shared<NoCredentials>(); }

absl::StatusOr<std::shared_ptr<AccessTokenSource>> MakeAccessTokenSource(
    const ClientOptions& client, OAuth2Options options) {
  if (absl::Status s = client.validate(); !s.ok()) return s;
  if (client.emulator_endpoint()) return MakeNoCredentials();
  if (client.key_file_path()) {
    auto text = ReadWhole(*client.key_file_path());
    if (!text.ok()) return text.status();
    return FromCredentialText(*text, std::move(options));
  }
  if (const char* path = std::getenv("GOOGLE_APPLICATION_CREDENTIALS"); path && *path) {
    auto text = ReadWhole(path);
    if (!text.ok()) return text.status();
    return FromCredentialText(*text, std::move(options));
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    const auto gcloud =
        std::filesystem::path(home) / ".config/gcloud/application_default_credentials.json";
    std::error_code ec;
    if (std::filesystem::is_regular_file(gcloud, ec)) {
      auto text = ReadWhole(gcloud.string());
      if (!text.ok()) return text.status();
      return FromCredentialText(*text, std::move(options));
    }
  }
  return MakeMetadataTokenSource(std::move(options));
}

}  // namespace gcpstream::connector
