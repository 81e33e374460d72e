#include "gcpstream/runtime/prometheus_reporter.h"

#include <httplib.h>

namespace gcpstream::runtime {

absl::StatusOr<std::unique_ptr<PrometheusReporter>> PrometheusReporter::start(
    MetricRegistry& registry, int port, std::string host) {
  std::unique_ptr<PrometheusReporter> reporter(new PrometheusReporter());
  reporter->server_.get("/metrics", [&registry](const httplib::Request&, httplib::Response& res) {
    res.set_content(ToPrometheusText(registry.snapshot()), "text/plain; version=0.0.4");
  });
  if (absl::Status s = reporter->server_.start(host, port); !s.ok()) return s;
  return reporter;
}

PrometheusReporter::~PrometheusReporter() = default;

}  // namespace gcpstream::runtime
