// The HTTP server of the dashboard and the Prometheus endpoint must not let a client hold up
// or starve the job: it stops at once whatever its clients do, keeps a bounded number of
// connections, binds its port exclusively, refuses foreign Host names on loopback (DNS
// rebinding) and answers only GET/HEAD.
#include "gcpstream/runtime/web/observer_http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

namespace gcpstream::runtime::web {
namespace {

using namespace std::chrono_literals;

int OpenFds() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)e;
    ++n;
  }
  return n;
}

// A TCP connection to 127.0.0.1:port (non-blocking connect: a full backlog does not block).
int Connect(int port, bool blocking = true) {
  const int fd = socket(AF_INET, SOCK_STREAM | (blocking ? 0 : SOCK_NONBLOCK), 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  (void)connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  return fd;
}

std::unique_ptr<ObserverHttpServer> Started(int port = 0,
                                            ObserverHttpServer::Options options = {}) {
  auto server = std::make_unique<ObserverHttpServer>(options);
  server->get("/hello", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("hi", "text/plain");
  });
  absl::Status s = server->start("127.0.0.1", port);
  EXPECT_TRUE(s.ok()) << s;
  return server;
}

TEST(ObserverHttpServerTest, StopDoesNotWaitForAClientThatKeepsItsConnectionBusy) {
  auto server = Started();
  const int fd = Connect(server->port());
  std::atomic<bool> stop_client{false};
  // Slowloris: a header line every 100 ms, never the end of the request.
  std::thread client([&] {
    const std::string start = "GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    (void)send(fd, start.data(), start.size(), MSG_NOSIGNAL);
    while (!stop_client.load()) {
      (void)send(fd, "X-A: b\r\n", 8, MSG_NOSIGNAL);
      std::this_thread::sleep_for(100ms);
    }
  });
  std::this_thread::sleep_for(300ms);
  const auto before = std::chrono::steady_clock::now();
  server->stop();
  const auto took = std::chrono::steady_clock::now() - before;
  stop_client = true;
  client.join();
  close(fd);
  EXPECT_LT(took, 3s) << "stop() waited for the client";
}

TEST(ObserverHttpServerTest, IdleConnectionsBeyondTheBoundStayOutOfTheProcess) {
  ObserverHttpServer::Options options;
  options.threads = 2;
  options.max_pending = 4;
  auto server = Started(0, options);
  const int before = OpenFds();
  std::vector<int> clients;
  for (int i = 0; i < 200; ++i) clients.push_back(Connect(server->port(), /*blocking=*/false));
  std::this_thread::sleep_for(500ms);
  const int accepted = OpenFds() - before - static_cast<int>(clients.size());
  // Serving threads + waiting connections + the one the accepting thread holds.
  EXPECT_LE(accepted, options.threads + options.max_pending + 2)
      << "the server took a descriptor per connection";
  for (int fd : clients) close(fd);
  server->stop();
}

TEST(ObserverHttpServerTest, APortInUseFailsInsteadOfBeingShared) {
  auto first = Started();
  ObserverHttpServer second(ObserverHttpServer::Options{.what = "dashboard"});
  absl::Status s = second.start("127.0.0.1", first->port());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("dashboard could not bind"), std::string::npos) << s;
}

TEST(ObserverHttpServerTest, BadAddressesAndPortsAreInvalidArguments) {
  for (const char* address : {"not-an-ip", "999.1.1.1", "", "localhost"}) {
    ObserverHttpServer server({});
    EXPECT_EQ(server.start(address, 0).code(), absl::StatusCode::kInvalidArgument) << address;
  }
  ObserverHttpServer server({});
  EXPECT_EQ(server.start("127.0.0.1", 70000).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(IsIpAddress("::1"));
  EXPECT_EQ(HttpUrl("::1", 80), "http://[::1]:80/");
  EXPECT_EQ(HttpUrl("127.0.0.1", 80), "http://127.0.0.1:80/");
}

TEST(ObserverHttpServerTest, ReadOnlyLoopbackOnlyWithJsonErrors) {
  auto server = Started();
  httplib::Client client("127.0.0.1", server->port());
  auto ok = client.Get("/hello");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  auto rebinding = client.Get("/hello", {{"Host", "attacker.example:8081"}});
  ASSERT_TRUE(rebinding);
  EXPECT_EQ(rebinding->status, 403) << "a foreign Host on a loopback server (DNS rebinding)";
  auto localhost = client.Get("/hello", {{"Host", "localhost:1234"}});
  ASSERT_TRUE(localhost);
  EXPECT_EQ(localhost->status, 200);
  auto post = client.Post("/hello", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET, HEAD");
  auto missing = client.Get("/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->get_header_value("Content-Type"), "application/json");
  EXPECT_NE(missing->body.find("\"errors\""), std::string::npos);
  server->stop();
  auto after = httplib::Client("127.0.0.1", server->port()).Get("/hello");
  EXPECT_FALSE(after && after->status == 200) << "answered after stop()";
}

}  // namespace
}  // namespace gcpstream::runtime::web
