#include "gcpstream/connector/endpoint.h"

#include <fmt/format.h>

#include <charconv>

#include "absl/status/status.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::connector {
namespace {

absl::Status Malformed(std::string_view value, std::string_view why) {
  return absl::InvalidArgumentError(
      fmt::format("emulator endpoint \"{}\" is not host:port: {}", value, why));
}

}  // namespace

absl::StatusOr<Endpoint> Endpoint::parse(std::string_view value) {
  std::string_view host;
  std::string_view port_text;
  if (value.find("://") != std::string_view::npos) {
    return Malformed(value, "it has a URL scheme; write only host:port, e.g. 127.0.0.1:9010");
  }
  if (!value.empty() && value.front() == '[') {
    const auto close = value.find(']');
    if (close == std::string_view::npos) return Malformed(value, "unclosed '['");
    host = value.substr(1, close - 1);
    std::string_view rest = value.substr(close + 1);
    if (rest.empty() || rest.front() != ':') return Malformed(value, "missing :port");
    port_text = rest.substr(1);
  } else {
    const auto colon = value.rfind(':');
    if (colon == std::string_view::npos) return Malformed(value, "missing :port");
    host = value.substr(0, colon);
    port_text = value.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return Malformed(value, "an IPv6 host must be written in brackets, e.g. [::1]:8085");
    }
  }
  if (host.empty()) return Malformed(value, "empty host");
  for (char c : host) {
    if (c == ' ' || c == '\t' || c == '/' || c == '@' || c == '[' || c == ']') {
      return Malformed(value, "host contains an invalid character");
    }
  }
  if (port_text.empty()) return Malformed(value, "empty port");
  for (char c : port_text) {
    if (c < '0' || c > '9') return Malformed(value, "port is not a decimal number");
  }
  std::uint32_t port = 0;
  const auto [end, error] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.size() > 5 || error != std::errc() || end != port_text.data() + port_text.size() ||
      port == 0 || port > 65535) {
    return Malformed(value, "port must be in 1..65535");
  }
  return Endpoint(std::string(host), static_cast<std::uint16_t>(port));
}

std::string Endpoint::target() const {
  if (host_.find(':') != std::string::npos) return fmt::format("[{}]:{}", host_, port_);
  return fmt::format("{}:{}", host_, port_);
}

}  // namespace gcpstream::connector
