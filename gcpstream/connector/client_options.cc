#include "gcpstream/connector/client_options.h"

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
