#include "gcpstream/runtime/prometheus_reporter.h"

#include <fmt/format.h>
#include <httplib.h>

#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::runtime {

absl::StatusOr<std::unique_ptr<PrometheusReporter>> PrometheusReporter::start(
    MetricRegistry& registry, int port, std::string host) {
  if (port < 0 || port > 65535) {
    // httplib would take the port modulo 65536 (70000 bound 4464).
    return absl::InvalidArgumentError(fmt::format(
        "metrics port {} is out of range: allowed 0..65535 (0 picks a free port)", port));
  }
  std::unique_ptr<PrometheusReporter> reporter(new PrometheusReporter());
  reporter->server_ = std::make_unique<httplib::Server>();
  reporter->server_->Get("/metrics", [&registry](const httplib::Request&, httplib::Response& res) {
    res.set_content(ToPrometheusText(registry.snapshot()), "text/plain; version=0.0.4");
  });
  if (port == 0) {
    reporter->port_ = reporter->server_->bind_to_any_port(host);
  } else {
    reporter->port_ = reporter->server_->bind_to_port(host, port) ? port : -1;
  }
  if (reporter->port_ <= 0) {
    return absl::UnavailableError(fmt::format("metrics reporter could not bind {}:{}", host, port));
  }
  httplib::Server* server = reporter->server_.get();
  reporter->thread_ = std::thread([server] { server->listen_after_bind(); });
  return reporter;
}

PrometheusReporter::~PrometheusReporter() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gcpstream::runtime
