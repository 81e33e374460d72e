#ifndef GCPSTREAM_CONNECTOR_ENDPOINT_H_
#define GCPSTREAM_CONNECTOR_ENDPOINT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gcpstream::connector {

// A parsed `host:port` pair, as given to `emulator_endpoint(...)`.
//
// Accepted forms: `host:port`, `1.2.3.4:port`, `[::1]:port`. The host must be non-empty and
// contain no whitespace, `/` or `@`; the port must be a decimal number in 1..65535. Anything else
// is rejected with INVALID_ARGUMENT whose message quotes the value (an endpoint is not a secret).
//
// Value type; thread-compatible.
class Endpoint {
 public:
  static absl::StatusOr<Endpoint> parse(std::string_view host_port);

  const std::string& host() const { return host_; }
  std::uint16_t port() const { return port_; }
  // The form gRPC accepts as a target: `host:port` (IPv6 hosts bracketed).
  std::string target() const;

  friend bool operator==(const Endpoint&, const Endpoint&) = default;

 private:
  Endpoint(std::string host, std::uint16_t port) : host_(std::move(host)), port_(port) {}
  std::string host_;
  std::uint16_t port_ = 0;
};

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_ENDPOINT_H_
