#include "gcpstream/connector/client_options.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gcpstream/connector/callback_queue.h"

namespace gcpstream::connector {

absl::Status ClientOptions::set_emulator_endpoint(std::string_view host_port) {
  auto parsed = Endpoint::parse(host_port);
  if (!parsed.ok()) return parsed.status();
  emulator_ = std::move(*parsed);
  return absl::OkStatus();
}

absl::Status ClientOptions::set_service_account_key_file(std::string path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("service_account_key_file needs a non-empty path");
  }
  key_file_ = std::move(path);
  return absl::OkStatus();
}

absl::Status ClientOptions::validate() const {
  if (emulator_ && key_file_) {
    return absl::InvalidArgumentError(
        "service_account_key_file cannot be combined with emulator_endpoint: the emulator "
        "channel is plaintext and carries no credentials");
  }
  return absl::OkStatus();
}

namespace {

// Whether `pem` holds a private key OpenSSL can decode. Never prompts for a passphrase (an
// encrypted key is refused), and leaves no error on OpenSSL's queue.
bool DecodesAsPrivateKey(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return false;
  auto no_passphrase = [](char*, int, int, void*) { return 0; };
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, no_passphrase, nullptr);
  BIO_free(bio);
  ERR_clear_error();
  if (key == nullptr) return false;
  EVP_PKEY_free(key);
  return true;
}

}  // namespace

absl::StatusOr<std::string> ReadServiceAccountKey(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::FailedPreconditionError(
        "the service account key file could not be read (check that the configured path is "
        "mounted and readable by this process)");
  }
  std::stringstream content;
  content << in.rdbuf();
  const std::string json = content.str();
  nlohmann::json parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::FailedPreconditionError("the service account key file is not valid JSON");
  }
  const auto type = parsed.find("type");
  if (type == parsed.end() || !type->is_string() || *type != "service_account") {
    return absl::FailedPreconditionError(
        "the service account key file is not a service-account key (its \"type\" is not "
        "\"service_account\")");
  }
  for (const char* field : {"private_key", "client_email"}) {
    if (!parsed.contains(field) || !parsed[field].is_string()) {
      return absl::FailedPreconditionError(std::string("the service account key file has no \"") +
                                           field + "\" field");
    }
  }
  // gRPC accepts a key it cannot decode and then fails every call (the job hung with work in
  // flight): decode it here, once, so a broken key fails at open.
  if (!DecodesAsPrivateKey(parsed["private_key"].get<std::string>())) {
    return absl::FailedPreconditionError(
        "the service account key file's \"private_key\" does not decode as a PEM private key "
        "(the file may be truncated or edited; download a new key)");
  }
  return json;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannel(const ClientOptions& options,
                                                             const std::string& production_target,
                                                             grpc::ChannelArguments args,
                                                             CallApi api) {
  if (absl::Status s = options.validate(); !s.ok()) return s;
  if (api == CallApi::kCallback) RetainCallbackQueue();
  if (options.emulator_endpoint()) {
    return grpc::CreateCustomChannel(options.emulator_endpoint()->target(),
                                     grpc::InsecureChannelCredentials(), args);
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (options.key_file_path()) {
    auto key = ReadServiceAccountKey(*options.key_file_path());
    if (!key.ok()) return key.status();
    auto call = grpc::ServiceAccountJWTAccessCredentials(*key, 3600);
    if (!call) {
      return absl::FailedPreconditionError(
          "the service account key file could not be turned into credentials");
    }
    credentials = grpc::CompositeChannelCredentials(grpc::SslCredentials({}), call);
  } else {
    credentials = grpc::GoogleDefaultCredentials();
    if (!credentials) {
      return absl::UnauthenticatedError(
          "application-default credentials are not available; configure them (for example "
          "GOOGLE_APPLICATION_CREDENTIALS or an attached service account) or set "
          "service_account_key_file");
    }
  }
  return grpc::CreateCustomChannel(production_target, credentials, args);
}

}  // namespace gcpstream::connector
