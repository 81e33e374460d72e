#ifndef GCPSTREAM_CONNECTOR_CLIENT_OPTIONS_BUILDER_H_
#define GCPSTREAM_CONNECTOR_CLIENT_OPTIONS_BUILDER_H_

#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "gcpstream/connector/client_options.h"

namespace gcpstream::connector {

// The credential setters every connector builder offers, for a builder `Derived` to inherit
// (CRTP). A setter's error is kept (the first one) and reported by the builder's build() through
// builder_error(), so setters chain. Not thread-safe, like any builder.
template <typename Derived>
class ClientOptionsBuilder {
 public:
  // A service-account JSON key read when the component starts (the builder keeps the path,
  // never the key). Not with emulator_endpoint.
  Derived& service_account_key_file(std::string path) {
    note(client_.set_service_account_key_file(std::move(path)));
    return static_cast<Derived&>(*this);
  }
  // host:port of a service without credentials (an emulator or an in-repo fake): plaintext.
  Derived& emulator_endpoint(std::string_view host_port) {
    note(client_.set_emulator_endpoint(host_port));
    return static_cast<Derived&>(*this);
  }

 protected:
  void note(absl::Status status) {
    if (error_.ok()) error_ = std::move(status);
  }
  // The first setter error, else the client options' own validation.
  absl::Status builder_error() const { return error_.ok() ? client_.validate() : error_; }
  const ClientOptions& client() const { return client_; }

 private:
  ClientOptions client_;
  absl::Status error_;
};

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_CLIENT_OPTIONS_BUILDER_H_
