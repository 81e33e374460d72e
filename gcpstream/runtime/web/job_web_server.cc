#include "gcpstream/runtime/web/job_web_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef GCPSTREAM_WEB_ASSETS_DIR
#define GCPSTREAM_WEB_ASSETS_DIR ""
#endif

namespace gcpstream::runtime::web {
namespace {

const char* ContentType(const std::string& name) {
  auto ends = [&](std::string_view suffix) {
    return name.size() >= suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  return "application/octet-stream";
}

// Reads `name` from `dir`; names come from a route that admits [A-Za-z0-9._-] only and no
// leading dot, so nothing outside the folder is reachable.
bool ReadAsset(const std::string& dir, const std::string& name, std::string& out) {
  if (name.empty() || name[0] == '.') return false;
  std::ifstream in(std::filesystem::path(dir) / name, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  out = buffer.str();
  return true;
}

}  // namespace

std::string DefaultAssetsDir() { return GCPSTREAM_WEB_ASSETS_DIR; }

JobWebServer::JobWebServer(const JobStatusTracker& status, MetricRegistry& metrics,
                           WebServerOptions options)
    : status_(status),
      metrics_(metrics),
      options_(std::move(options)),
      sampler_(options_.history_samples) {}

absl::StatusOr<std::unique_ptr<JobWebServer>> JobWebServer::start(const JobStatusTracker& status,
                                                                  MetricRegistry& metrics,
                                                                  WebServerOptions options) {
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(fmt::format(
        "dashboard port {} is out of range: allowed 0..65535 (0 picks a free port)", options.port));
  }
  if (options.sample_interval.count() <= 0) {
    return absl::InvalidArgumentError("dashboard sample interval must be positive");
  }
  if (options.assets_dir.empty()) options.assets_dir = DefaultAssetsDir();
  std::unique_ptr<JobWebServer> s(new JobWebServer(status, metrics, std::move(options)));
  JobWebServer* self = s.get();
  RestApi::Sources sources;
  sources.job = [self] { return self->status_.snapshot(); };
  sources.tasks = [self] { return self->sampler_.tasks(); };
  sources.history = [self] { return self->sampler_.history(); };
  sources.metrics = [self] { return self->metrics_.snapshot(); };
  sources.now_ms = [] { return WallNowMs(); };
  sources.refresh_interval_ms = self->options_.sample_interval.count();
  s->api_ = std::make_unique<RestApi>(std::move(sources));

  s->server_ = std::make_unique<httplib::Server>();
  httplib::Server& server = *s->server_;
  server.set_default_headers({{"X-Content-Type-Options", "nosniff"}});
  auto api = [self](const httplib::Request& req, httplib::Response& res) {
    ApiResponse r = self->api_->get(req.path);
    res.status = r.status;
    res.set_header("Cache-Control", "no-store");
    res.set_content(std::move(r.body), "application/json");
  };
  server.Get(R"(/jobs(/.*)?)", api);
  server.Get("/config", api);
  auto asset = [self](const std::string& name, httplib::Response& res) {
    std::string body;
    if (!ReadAsset(self->options_.assets_dir, name, body)) {
      res.status = 404;
      res.set_content(
          fmt::format(
              "dashboard file '{}' is not in {} (build the project, or set "
              "ExecutionConfig::ui_assets_dir / gcpstream run --ui-assets); the JSON "
              "API at /jobs/overview works without it\n",
              name, self->options_.assets_dir.empty() ? "(no folder)" : self->options_.assets_dir),
          "text/plain; charset=utf-8");
      return;
    }
    res.set_content(std::move(body), ContentType(name));
  };
  server.Get(
      "/", [asset](const httplib::Request&, httplib::Response& res) { asset("index.html", res); });
  server.Get(R"(/static/([A-Za-z0-9_.-]+))",
             [asset](const httplib::Request& req, httplib::Response& res) {
               asset(req.matches[1].str(), res);
             });

  const WebServerOptions& o = s->options_;
  if (o.port == 0) {
    s->port_ = server.bind_to_any_port(o.bind_address);
  } else {
    s->port_ = server.bind_to_port(o.bind_address, o.port) ? o.port : -1;
  }
  if (s->port_ <= 0) {
    return absl::UnavailableError(
        fmt::format("dashboard could not bind {}:{}", o.bind_address, o.port));
  }
  s->sampler_.sample(metrics.snapshot(), status.snapshot().plan, WallNowMs());
  s->sampler_thread_ = std::thread([self] { self->sample_loop(); });
  s->server_thread_ = std::thread([self] { self->server_->listen_after_bind(); });
  return s;
}

void JobWebServer::sample_loop() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, options_.sample_interval, [this] { return stopping_; })) {
    lock.unlock();
    sampler_.sample(metrics_.snapshot(), status_.snapshot().plan, WallNowMs());
    lock.lock();
  }
}

JobWebServer::~JobWebServer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (sampler_thread_.joinable()) sampler_thread_.join();
  if (server_) server_->stop();
  if (server_thread_.joinable()) server_thread_.join();
}

}  // namespace gcpstream::runtime::web
