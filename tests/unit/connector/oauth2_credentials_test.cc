// OAuth2 access tokens for REST clients, against an in-process token endpoint: the
// service-account JWT (RFC 7523; RS256 signature checked with the key's public half), the
// refresh-token grant (RFC 6749 section 6), the metadata server's token, caching and renewal
// before expiry, endpoint failures classified by HTTP status, and no secret in any error.
#include "gcpstream/connector/oauth2_credentials.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"

namespace gcpstream::connector {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A token endpoint and metadata server on localhost that records what it was sent.
class TokenEndpoint {
 public:
  TokenEndpoint() {
    server_.Post("/token", [this](const httplib::Request& req, httplib::Response& res) {
      ++calls;
      last_form = req.params;
      res.status = status.load();
      res.set_content(status == 200 ? R"({"access_token": "tok-)" + std::to_string(calls.load()) +
                                          R"(", "expires_in": 3600, "token_type": "Bearer"})"
                                    : R"({"error": "invalid_grant"})",
                      "application/json");
    });
    server_.Get("/computeMetadata/v1/instance/service-accounts/default/token",
                [this](const httplib::Request& req, httplib::Response& res) {
                  ++calls;
                  if (req.get_header_value("Metadata-Flavor") != "Google") {
                    res.status = 403;
                    return;
                  }
                  res.set_content(R"({"access_token": "meta", "expires_in": 100})",
                                  "application/json");
                });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~TokenEndpoint() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::atomic<int> calls{0};
  std::atomic<int> status{200};
  httplib::Params last_form;

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

std::shared_ptr<EVP_PKEY> NewRsaKey() {
  return std::shared_ptr<EVP_PKEY>(EVP_RSA_gen(2048), EVP_PKEY_free);
}

std::string Pem(EVP_PKEY* key) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

struct ManualClock {
  absl::Time now = absl::FromUnixSeconds(1'800'000'000);
};

TEST(OAuth2CredentialsTest, AServiceAccountExchangesAnRs256SignedJwtAndCachesTheToken) {
  TokenEndpoint endpoint;
  auto key = NewRsaKey();
  const nlohmann::json key_json = {{"type", "service_account"},
                                   {"client_email", "sa@p.iam.gserviceaccount.com"},
                                   {"private_key_id", "kid-1"},
                                   {"private_key", Pem(key.get())},
                                   {"token_uri", endpoint.url() + "/token"}};
  auto clock = std::make_shared<ManualClock>();
  OAuth2Options options;
  options.clock = [clock] { return clock->now; };
  auto source = MakeServiceAccountTokenSource(key_json.dump(), options);
  ASSERT_TRUE(source.ok()) << source.status();
  auto token = (*source)->token();
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "tok-1");

  // The form carries the jwt-bearer grant and a JWT whose signature the public key verifies.
  auto grant = endpoint.last_form.find("grant_type");
  ASSERT_NE(grant, endpoint.last_form.end());
  EXPECT_EQ(grant->second, "urn:ietf:params:oauth:grant-type:jwt-bearer");
  const std::string jwt = endpoint.last_form.find("assertion")->second;
  std::vector<std::string> parts = absl::StrSplit(jwt, '.');
  ASSERT_EQ(parts.size(), 3u);
  std::string header, claims, signature;
  ASSERT_TRUE(absl::WebSafeBase64Unescape(parts[0], &header));
  ASSERT_TRUE(absl::WebSafeBase64Unescape(parts[1], &claims));
  ASSERT_TRUE(absl::WebSafeBase64Unescape(parts[2], &signature));
  const auto h = nlohmann::json::parse(header);
  const auto c = nlohmann::json::parse(claims);
  EXPECT_EQ(h["alg"], "RS256");
  EXPECT_EQ(h["kid"], "kid-1");
  EXPECT_EQ(c["iss"], "sa@p.iam.gserviceaccount.com");
  EXPECT_EQ(c["aud"], endpoint.url() + "/token");
  EXPECT_EQ(c["scope"], "https://www.googleapis.com/auth/cloud-platform");
  EXPECT_EQ(c["iat"], 1'800'000'000);
  EXPECT_EQ(c["exp"], 1'800'003'600);
  const std::string signed_part = parts[0] + "." + parts[1];
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  ASSERT_EQ(EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()), 1);
  EXPECT_EQ(
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                       signature.size(), reinterpret_cast<const unsigned char*>(signed_part.data()),
                       signed_part.size()),
      1);

  // Cached while more than the margin (5 min) of its hour remains; renewed after.
  clock->now += absl::Minutes(54);
  EXPECT_EQ(*(*source)->token(), "tok-1");
  EXPECT_EQ(endpoint.calls.load(), 1);
  clock->now += absl::Minutes(2);
  EXPECT_EQ(*(*source)->token(), "tok-2");
  EXPECT_EQ(endpoint.calls.load(), 2);
}

TEST(OAuth2CredentialsTest, AnAuthorizedUserUsesTheRefreshTokenGrant) {
  TokenEndpoint endpoint;
  const nlohmann::json cred = {{"type", "authorized_user"},
                               {"client_id", "id"},
                               {"client_secret", "shh-secret"},
                               {"refresh_token", "rt-secret"},
                               {"token_uri", endpoint.url() + "/token"}};
  auto source = MakeAuthorizedUserTokenSource(cred.dump());
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ(*(*source)->token(), "tok-1");
  EXPECT_EQ(endpoint.last_form.find("grant_type")->second, "refresh_token");
  EXPECT_EQ(endpoint.last_form.find("refresh_token")->second, "rt-secret");
  auto incomplete = MakeAuthorizedUserTokenSource(R"({"type": "authorized_user"})");
  EXPECT_EQ(incomplete.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(OAuth2CredentialsTest, TheMetadataServerIsAskedWithItsFlavorHeader) {
  TokenEndpoint endpoint;
  OAuth2Options options;
  options.metadata_server = endpoint.url();
  auto source = MakeMetadataTokenSource(options);
  auto token = source->token();
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "meta");
  // expires_in 100 s is inside the 5 min margin: every call asks again.
  EXPECT_TRUE(source->token().ok());
  EXPECT_EQ(endpoint.calls.load(), 2);
}

TEST(OAuth2CredentialsTest, EndpointFailuresAreClassifiedAndCarryNoSecret) {
  TokenEndpoint endpoint;
  const nlohmann::json cred = {{"type", "authorized_user"},
                               {"client_id", "id"},
                               {"client_secret", "shh-secret"},
                               {"refresh_token", "rt-secret"},
                               {"token_uri", endpoint.url() + "/token"}};
  auto source = MakeAuthorizedUserTokenSource(cred.dump());
  ASSERT_TRUE(source.ok());
  endpoint.status = 400;
  auto refused = (*source)->token();
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(refused.status().message(), HasSubstr("invalid_grant"));
  endpoint.status = 503;
  EXPECT_EQ((*source)->token().status().code(), absl::StatusCode::kUnavailable);
  for (const auto& status : {refused.status(), (*source)->token().status()}) {
    EXPECT_THAT(status.message(), Not(HasSubstr("rt-secret")));
    EXPECT_THAT(status.message(), Not(HasSubstr("shh-secret")));
  }
  const nlohmann::json unreachable = {{"type", "authorized_user"},
                                      {"client_id", "id"},
                                      {"client_secret", "s"},
                                      {"refresh_token", "r"},
                                      {"token_uri", "http://127.0.0.1:1/token"}};
  auto nowhere = MakeAuthorizedUserTokenSource(unreachable.dump());
  ASSERT_TRUE(nowhere.ok());
  EXPECT_EQ((*nowhere)->token().status().code(), absl::StatusCode::kUnavailable);
}

TEST(OAuth2CredentialsTest, ABrokenKeyIsRefusedWithoutQuotingIt) {
  const nlohmann::json key_json = {{"type", "service_account"},
                                   {"client_email", "sa@p"},
                                   {"private_key", "-----BEGIN PRIVATE KEY-----\nSECRETSTUFF\n"}};
  auto source = MakeServiceAccountTokenSource(key_json.dump());
  EXPECT_EQ(source.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(source.status().message(), Not(HasSubstr("SECRETSTUFF")));
  EXPECT_FALSE(MakeServiceAccountTokenSource("[[[").ok());
}

TEST(OAuth2CredentialsTest, AnEmulatorNeedsNoCredentialsAndAKeyFileIsReadByItsType) {
  ClientOptions emulator;
  ASSERT_TRUE(emulator.set_emulator_endpoint("localhost:9050").ok());
  auto none = MakeAccessTokenSource(emulator);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*(*none)->token(), "");

  const auto path = std::filesystem::temp_directory_path() /
                    ("oauth2-test-" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream out(path);
    out << R"({"type": "external_account"})";
  }
  ClientOptions keyed;
  ASSERT_TRUE(keyed.set_service_account_key_file(path.string()).ok());
  auto unsupported = MakeAccessTokenSource(keyed);
  EXPECT_EQ(unsupported.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(unsupported.status().message(), HasSubstr("external_account"));
  EXPECT_THAT(unsupported.status().message(), Not(HasSubstr(path.string())));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace gcpstream::connector
