#include "gcpstream/runtime/web/job_web_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

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
      sampler_(options_.history_samples),
      server_(ObserverHttpServer::Options{.what = "dashboard"}) {}

absl::StatusOr<std::unique_ptr<JobWebServer>> JobWebServer::start(const JobStatusTracker& status,
                                                                  MetricRegistry& metrics,
                                                                  WebServerOptions options) {
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

  auto api = [self](const httplib::Request& req, httplib::Response& res) {
    ApiResponse r = self->api_->get(req.path);
    res.status = r.status;
    res.set_header("Cache-Control", "no-store");
    res.set_content(std::move(r.body), "application/json");
  };
  s->server_.get(R"(/jobs(/.*)?)", api);
  s->server_.get(R"(/config/?)", api);
  auto asset = [self](const std::string& name, httplib::Response& res) {
    std::string body;
    if (!ReadAsset(self->options_.assets_dir, name, body)) {
      res.status = 404;
      res.set_content(fmt::format("dashboard file '{}' is missing (see the job's log); the JSON "
                                  "API at /jobs/overview works without it\n",
                                  name),
                      "text/plain; charset=utf-8");
      return;
    }
    res.set_content(std::move(body), ContentType(name));
  };
  s->server_.get(
      "/", [asset](const httplib::Request&, httplib::Response& res) { asset("index.html", res); });
  s->server_.get(R"(/static/([A-Za-z0-9_.-]+))",
                 [asset](const httplib::Request& req, httplib::Response& res) {
                   asset(req.matches[1].str(), res);
                 });
  const WebServerOptions& o = s->options_;
  if (absl::Status started = s->server_.start(o.bind_address, o.port); !started.ok()) {
    return started;
  }
  if (!std::filesystem::exists(std::filesystem::path(o.assets_dir) / "index.html")) {
    spdlog::warn(
        "dashboard: no index.html in '{}': the page is not served (the REST API is); build the "
        "project (it copies web/ into build/web) or pass ExecutionConfig::ui_assets_dir / "
        "gcpstream run --ui-assets",
        o.assets_dir);
  }
  // The plan is fixed for the job's life (JobRunner sets it when it is built): taken once, so
  // each sample copies neither it nor the checkpoint and exception histories.
  s->plan_ = status.snapshot().plan;
  s->sampler_.sample(metrics.snapshot(), s->plan_, WallNowMs());
  s->sampler_thread_ = std::thread([self] { self->sample_loop(); });
  return s;
}

int JobWebServer::port() const { return server_.port(); }

void JobWebServer::sample_loop() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, options_.sample_interval, [this] { return stopping_; })) {
    lock.unlock();
    sampler_.sample(metrics_.snapshot(), plan_, WallNowMs());
    lock.lock();
  }
}

JobWebServer::~JobWebServer() {
  server_.stop();  // no handler runs after this; it does not wait for slow clients
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (sampler_thread_.joinable()) sampler_thread_.join();
}

}  // namespace gcpstream::runtime::web
