#ifndef GCPSTREAM_RUNTIME_WEB_OBSERVER_HTTP_SERVER_H_
#define GCPSTREAM_RUNTIME_WEB_OBSERVER_HTTP_SERVER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace gcpstream::runtime::web {

// Whether `address` is a literal IPv4 or IPv6 address ("127.0.0.1", "::1", "0.0.0.0").
bool IsIpAddress(const std::string& address);
// "http://127.0.0.1:8081/", "http://[::1]:8081/".
std::string HttpUrl(const std::string& address, int port);

// The HTTP server a job's observers talk to (the dashboard, the Prometheus endpoint), built so
// that no client can hold up or starve the job it observes:
//  - stop() returns at once, whatever the clients do: the serving threads are left to finish on
//    their own (a client that sends a byte every few seconds can keep a connection busy for
//    as long as it likes), and handlers are never called once stop() returned, so they may use
//    objects the caller destroys after it;
//  - at most `threads` requests are served at once and `max_pending` accepted connections wait;
//    beyond that connections stay in the kernel's backlog instead of taking the process's
//    file descriptors (a flood of idle connections must not fail a checkpoint);
//  - the port is bound exclusively (no SO_REUSEPORT: a second process asking for a port in use
//    fails instead of sharing its connections);
//  - bound to a loopback address it answers only requests whose Host is a loopback name, so a
//    web page the user visits cannot read it through DNS rebinding (403 otherwise);
//  - read-only: GET and HEAD; other methods answer 405; errors have a JSON body.
// Handlers run on the server's threads. Methods are not thread-safe; call them from one thread.
class ObserverHttpServer {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  struct Options {
    std::string what = "server";  // for error messages: "dashboard", "metrics reporter"
    int threads = 8;              // a browser opens up to 6 keep-alive connections per host
    int max_pending = 16;
    std::chrono::seconds io_timeout{3};  // per read or write on a connection
  };

  explicit ObserverHttpServer(Options options);
  ~ObserverHttpServer();  // stop()

  // Registers a GET (and HEAD) handler for the regular expression `pattern`. Before start().
  void get(const std::string& pattern, Handler handler);

  // Binds `address:port` (port 0: any free one) and starts serving; returns once it accepts
  // connections. Errors: INVALID_ARGUMENT for a port outside 0..65535 or an address that is
  // not an IP address literal, UNAVAILABLE when the address cannot be bound.
  absl::Status start(const std::string& address, int port);
  int port() const { return port_; }

  // Stops accepting and answering; in-progress handlers finish first. Returns promptly.
  void stop();

 private:
  struct Shared;
  Options options_;
  std::shared_ptr<Shared> shared_;
  std::shared_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace gcpstream::runtime::web

#endif  // GCPSTREAM_RUNTIME_WEB_OBSERVER_HTTP_SERVER_H_
