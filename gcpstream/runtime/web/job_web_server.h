#ifndef GCPSTREAM_RUNTIME_WEB_JOB_WEB_SERVER_H_
#define GCPSTREAM_RUNTIME_WEB_JOB_WEB_SERVER_H_

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "gcpstream/runtime/job_status.h"
#include "gcpstream/runtime/metric_registry.h"
#include "gcpstream/runtime/web/metric_sampler.h"
#include "gcpstream/runtime/web/observer_http_server.h"
#include "gcpstream/runtime/web/rest_api.h"

namespace gcpstream::runtime::web {

struct WebServerOptions {
  int port = 0;  // 0: any free port
  std::string bind_address = "127.0.0.1";
  // Folder holding index.html, app.js, app.css and the vendored libraries; empty: the build's
  // web/ folder (compiled in).
  std::string assets_dir;
  // How often metrics are sampled into rates and the chart history (the page polls as often).
  std::chrono::milliseconds sample_interval{1000};
  std::size_t history_samples = 300;  // 5 minutes at 1 s
};

// The job's dashboard: the REST API of RestApi under /jobs and /config, the single-page
// dashboard at / (static files under /static/), and a sampler thread turning the metric
// registry into rates once per sample_interval (one registry snapshot per interval, whether or
// not anyone is looking). Served by an ObserverHttpServer (its threads, limits and guarantees:
// no client can hold up the job's end or take its file descriptors); read-only.
class JobWebServer {
 public:
  // Binds and starts serving. Errors: INVALID_ARGUMENT for a port outside 0..65535 or a bind
  // address that is not an IP address, UNAVAILABLE when the address cannot be bound. A
  // missing assets folder is not an error (logged as a warning): the API still answers and /
  // says what is missing.
  static absl::StatusOr<std::unique_ptr<JobWebServer>> start(const JobStatusTracker& status,
                                                             MetricRegistry& metrics,
                                                             WebServerOptions options);
  ~JobWebServer();  // stops serving and sampling

  int port() const;

 private:
  JobWebServer(const JobStatusTracker& status, MetricRegistry& metrics, WebServerOptions options);
  void sample_loop();

  const JobStatusTracker& status_;
  MetricRegistry& metrics_;
  WebServerOptions options_;
  MetricSampler sampler_;
  JobPlan plan_;
  std::unique_ptr<RestApi> api_;
  ObserverHttpServer server_;
  std::thread sampler_thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

// The folder the build vendored the dashboard's files into.
std::string DefaultAssetsDir();

}  // namespace gcpstream::runtime::web

#endif  // GCPSTREAM_RUNTIME_WEB_JOB_WEB_SERVER_H_
