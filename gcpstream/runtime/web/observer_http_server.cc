#include "gcpstream/runtime/web/observer_http_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <shared_mutex>
#include <vector>

namespace gcpstream::runtime::web {

struct ObserverHttpServer::Shared {
  // Handlers hold `gate` shared while they run; stop() takes it exclusively to close it.
  std::shared_mutex gate;
  bool open = true;
  // The connection queue and the listening thread's end.
  std::mutex mu;
  std::condition_variable cv;
  bool closing = false;
  bool listener_done = false;
};

namespace {

// httplib's connection queue, bounded: enqueue() (called by the accepting thread) waits while
// `max_pending` connections wait for a thread, so further connections stay in the kernel's
// backlog rather than in this process's file descriptors.
class BoundedTaskQueue final : public httplib::TaskQueue {
 public:
  BoundedTaskQueue(int threads, std::size_t max_pending, std::shared_ptr<void> keep_alive,
                   std::mutex& mu, std::condition_variable& cv, const bool& closing)
      : max_pending_(max_pending),
        keep_alive_(std::move(keep_alive)),
        mu_(mu),
        cv_(cv),
        closing_(closing) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return pending_.size() < max_pending_ || closing_ || done_; });
    pending_.push_back(std::move(fn));
    cv_.notify_all();
  }

  void shutdown() override {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return !pending_.empty() || done_; });
        if (pending_.empty()) return;
        fn = std::move(pending_.front());
        pending_.pop_front();
      }
      cv_.notify_all();
      fn();  // serves one connection (and closes it)
    }
  }

  const std::size_t max_pending_;
  std::shared_ptr<void> keep_alive_;  // the shared state mu_/cv_/closing_ live in
  std::mutex& mu_;
  std::condition_variable& cv_;
  const bool& closing_;
  std::deque<std::function<void()>> pending_;
  bool done_ = false;
  std::vector<std::thread> workers_;
};

void JsonError(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  nlohmann::json body = {{"errors", {message}}};
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json");
}

bool IsLoopback(const std::string& address) {
  return address.rfind("127.", 0) == 0 || address == "::1";
}

// Whether an HTTP Host header names this machine's loopback ("127.0.0.1:8081", "localhost",
// "[::1]:8081").
bool LoopbackHost(const std::string& host) {
  std::string name = host;
  if (!name.empty() && name.front() == '[') {
    const auto close = name.find(']');
    if (close == std::string::npos) return false;
    name = name.substr(1, close - 1);
  } else if (const auto colon = name.rfind(':'); colon != std::string::npos) {
    name = name.substr(0, colon);
  }
  return name == "localhost" || IsLoopback(name);
}

}  // namespace

bool IsIpAddress(const std::string& address) {
  unsigned char buffer[sizeof(in6_addr)];
  return inet_pton(AF_INET, address.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, address.c_str(), buffer) == 1;
}

std::string HttpUrl(const std::string& address, int port) {
  return address.find(':') != std::string::npos ? fmt::format("http://[{}]:{}/", address, port)
                                                : fmt::format("http://{}:{}/", address, port);
}

ObserverHttpServer::ObserverHttpServer(Options options)
    : options_(std::move(options)),
      shared_(std::make_shared<Shared>()),
      server_(std::make_shared<httplib::Server>()) {}

ObserverHttpServer::~ObserverHttpServer() { stop(); }

void ObserverHttpServer::get(const std::string& pattern, Handler handler) {
  std::shared_ptr<Shared> shared = shared_;
  server_->Get(pattern, [shared, handler = std::move(handler)](const httplib::Request& req,
                                                               httplib::Response& res) {
    std::shared_lock lock(shared->gate);
    if (!shared->open) {
      JsonError(res, 503, "the job has ended");
      return;
    }
    handler(req, res);
  });
}

absl::Status ObserverHttpServer::start(const std::string& address, int port) {
  if (port < 0 || port > 65535) {
    // httplib would take the port modulo 65536 (70000 would bind 4464).
    return absl::InvalidArgumentError(fmt::format(
        "{} port {} is out of range: allowed 0..65535 (0 picks a free port)", options_.what, port));
  }
  if (!IsIpAddress(address)) {
    return absl::InvalidArgumentError(
        fmt::format("{} address '{}' is not an IP address (e.g. 127.0.0.1, ::1, 0.0.0.0)",
                    options_.what, address));
  }
  httplib::Server& server = *server_;
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second process
  // binding a port in use shares its connections instead of failing.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server.set_read_timeout(options_.io_timeout);
  server.set_write_timeout(options_.io_timeout);
  server.set_keep_alive_timeout(options_.io_timeout.count());
  server.set_payload_max_length(64 * 1024);  // a read-only API takes no bodies
  server.set_default_headers({{"X-Content-Type-Options", "nosniff"}});
  const bool loopback = IsLoopback(address);
  server.set_pre_routing_handler([loopback](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET" && req.method != "HEAD") {
      res.set_header("Allow", "GET, HEAD");
      JsonError(res, 405, "read-only: only GET and HEAD are served");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (loopback && req.has_header("Host") && !LoopbackHost(req.get_header_value("Host"))) {
      JsonError(
          res, 403,
          "Host '" + req.get_header_value("Host") + "' is not this machine's loopback address");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) JsonError(res, res.status, fmt::format("HTTP {}", res.status));
  });
  std::shared_ptr<Shared> shared = shared_;
  const int threads = options_.threads;
  const auto max_pending = static_cast<std::size_t>(options_.max_pending);
  server.new_task_queue = [shared, threads, max_pending]() -> httplib::TaskQueue* {
    return new BoundedTaskQueue(threads, max_pending, shared, shared->mu, shared->cv,
                                shared->closing);
  };

  port_ = port == 0 ? server.bind_to_any_port(address)
                    : (server.bind_to_port(address, port) ? port : -1);
  if (port_ <= 0) {
    port_ = 0;
    return absl::UnavailableError(
        fmt::format("{} could not bind {}:{} (the port is in use, or the address is not one "
                    "of this machine's)",
                    options_.what, address, port));
  }
  // The listening thread owns a reference to the server: connections still being served when
  // stop() returns keep using it until they end.
  thread_ = std::thread([server = server_, shared] {
    server->listen_after_bind();
    std::lock_guard lock(shared->mu);
    shared->listener_done = true;
    shared->cv.notify_all();
  });
  // Returns once the server accepts (httplib signals nothing: look every millisecond), so a
  // stop() right after start() cannot miss the listener.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!server_->is_running() && std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard lock(shared_->mu);
      if (shared_->listener_done) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return absl::OkStatus();
}

void ObserverHttpServer::stop() {
  if (!thread_.joinable()) return;
  {
    std::unique_lock gate(shared_->gate);  // waits for handlers in progress
    shared_->open = false;
  }
  {
    std::lock_guard lock(shared_->mu);
    shared_->closing = true;
  }
  shared_->cv.notify_all();
  server_->stop();
  // Usually the listener ends at once; a client holding a connection open must not hold the
  // job up, so after a short wait it is left to end on its own.
  bool done;
  {
    std::unique_lock lock(shared_->mu);
    done = shared_->cv.wait_for(lock, std::chrono::milliseconds(500),
                                [&] { return shared_->listener_done; });
  }
  if (done) {
    thread_.join();
  } else {
    thread_.detach();
  }
}

}  // namespace gcpstream::runtime::web
