#ifndef GCPSTREAM_RUNTIME_PROMETHEUS_REPORTER_H_
#define GCPSTREAM_RUNTIME_PROMETHEUS_REPORTER_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "gcpstream/runtime/metric_registry.h"
#include "gcpstream/runtime/web/observer_http_server.h"

namespace gcpstream::runtime {

// Serves the registry in Prometheus text format at http://<host>:<port>/metrics from threads
// of its own (an ObserverHttpServer: no scraper can hold up the job's end). Gauges are
// evaluated on those threads.
class PrometheusReporter {
 public:
  // Binds `host:port` (port 0 picks a free port) and starts serving. Loopback only by default:
  // metrics name resources and should not be exposed by accident. Errors: INVALID_ARGUMENT for
  // a port outside 0..65535 or a host that is not an IP address, UNAVAILABLE when the port
  // cannot be bound.
  static absl::StatusOr<std::unique_ptr<PrometheusReporter>> start(MetricRegistry& registry,
                                                                   int port,
                                                                   std::string host = "127.0.0.1");
  ~PrometheusReporter();  // stops serving

  int port() const { return server_.port(); }

 private:
  PrometheusReporter() : server_(web::ObserverHttpServer::Options{.what = "metrics reporter"}) {}
  web::ObserverHttpServer server_;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_PROMETHEUS_REPORTER_H_
