#ifndef GCPSTREAM_CONNECTOR_CLIENT_OPTIONS_H_
#define GCPSTREAM_CONNECTOR_CLIENT_OPTIONS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/connector/endpoint.h"

namespace gcpstream::connector {

// Where a connector's clients connect and how they authenticate. Shared by every connector.
//
// - emulator_endpoint("host:port"): a plaintext channel with no credentials, for the local
//   emulators only. Never read from the environment: a stray *_EMULATOR_HOST variable must not
//   redirect a production job.
// - service_account_key_file(path): the service-account JSON key at `path`, read when the
//   component starts (not at configuration time). Errors reading or parsing it name neither the
//   path nor any key material.
// - neither: application-default credentials (GOOGLE_APPLICATION_CREDENTIALS, metadata server).
// The two setters are mutually exclusive. Value type; thread-compatible.
class ClientOptions {
 public:
  // INVALID_ARGUMENT when `host_port` is malformed (the message quotes the value).
  absl::Status set_emulator_endpoint(std::string_view host_port);
  // INVALID_ARGUMENT when `path` is empty. The file is not touched here.
  absl::Status set_service_account_key_file(std::string path);

  const std::optional<Endpoint>& emulator_endpoint() const { return emulator_; }
  bool has_key_file() const { return key_file_.has_value(); }
  // INVALID_ARGUMENT when both options are set.
  absl::Status validate() const;

  // The path, for the component that reads it. Never log it.
  const std::optional<std::string>& key_file_path() const { return key_file_; }

 private:
  std::optional<Endpoint> emulator_;
  std::optional<std::string> key_file_;
};

// Reads and checks a service-account JSON key file. Errors: FAILED_PRECONDITION ("could not be
// read", "is not a service-account key") — never with the path or the file's content.
absl::StatusOr<std::string> ReadServiceAccountKey(const std::string& path);

// Which of gRPC's call APIs a channel's stubs use.
enum class CallApi {
  // Callback (async()) calls: the channel first pins gRPC's global callback queue
  // (RetainCallbackQueue, callback_queue.h).
  kCallback,
  // Blocking calls only: nothing is pinned. The callback queue's two polling threads compete
  // with a blocking reader for the same socket events; measured on the Pub/Sub pull benchmark,
  // keeping them alive added about 28 % to a raw StreamingPull loop's CPU.
  kBlockingOnly,
};

// One gRPC channel for `options`: insecure for an emulator; TLS with the key file's or the
// application-default credentials otherwise, to `production_target` (e.g.
// "pubsub.googleapis.com:443"). `api` must name every call API the channel's stubs use.
// Errors: those of validate() and ReadServiceAccountKey(), UNAUTHENTICATED when
// application-default credentials are unavailable.
absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannel(
    const ClientOptions& options, const std::string& production_target,
    grpc::ChannelArguments args = grpc::ChannelArguments(), CallApi api = CallApi::kCallback);

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_CLIENT_OPTIONS_H_
