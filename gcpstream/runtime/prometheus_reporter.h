#ifndef GCPSTREAM_RUNTIME_PROMETHEUS_REPORTER_H_
#define GCPSTREAM_RUNTIME_PROMETHEUS_REPORTER_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "gcpstream/runtime/metric_registry.h"

namespace httplib {
class Server;
}

namespace gcpstream::runtime {

// Serves the registry in Prometheus text format at http://<host>:<port>/metrics from a thread
// of its own (cpp-httplib). Gauges are evaluated on that thread.
class PrometheusReporter {
 public:
  // Binds `host:port` (port 0 picks a free port) and starts serving. Loopback only by default:
  // metrics name resources and should not be exposed by accident. Errors: INVALID_ARGUMENT for
  // a port outside 0..65535, UNAVAILABLE when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<PrometheusReporter>> start(MetricRegistry& registry,
                                                                   int port,
                                                                   std::string host = "127.0.0.1");
  ~PrometheusReporter();  // stops serving

  int port() const { return port_; }

 private:
  PrometheusReporter() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_PROMETHEUS_REPORTER_H_
