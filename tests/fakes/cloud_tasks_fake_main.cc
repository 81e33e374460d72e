// The Cloud Tasks fake as a standalone program, to point the CLI or the sink at:
//
//   cloud_tasks_fake --port 8123 --queue projects/p/locations/us-central1/queues/q
//
// then `emulator_endpoint: 127.0.0.1:8123` in a pipeline's cloud_tasks sink. Fault flags:
// --max-concurrent N, --max-rate R, --unavailable-on-call N, --lose-answer-every N,
// --create-latency-ms MS, --name-retention-s S. It prints "listening on HOST:PORT" once ready
// and runs until SIGINT or SIGTERM.
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <thread>

#include "tests/fakes/cloud_tasks_fake.h"

namespace {
std::atomic<bool> g_stop{false};
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"An in-process fake of the Cloud Tasks v2 API (google.cloud.tasks.v2.CloudTasks)"};
  int port = 0;
  std::string host = "127.0.0.1";
  std::vector<std::string> queues;
  gcpstream::testing::CloudTasksFakeOptions options;
  int latency_ms = 0;
  int retention_s = 3600;
  app.add_option("--port", port, "port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--host", host, "address to listen on");
  app.add_option("--queue", queues, "a queue to create at start (projects/P/locations/L/queues/Q)");
  app.add_option("--max-concurrent", options.max_concurrent_creates,
                 "RESOURCE_EXHAUSTED above this many concurrent CreateTask calls (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-rate", options.max_creates_per_second,
                 "RESOURCE_EXHAUSTED above this many CreateTask calls per second (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--unavailable-on-call", options.unavailable_on_call,
                 "the Nth CreateTask answers UNAVAILABLE (0: never)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lose-answer-every", options.lose_answer_every,
                 "every Nth CreateTask applies, then answers DEADLINE_EXCEEDED (0: never)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--create-latency-ms", latency_ms, "each CreateTask takes this long")
      ->check(CLI::Range(0, 600000));
  app.add_option("--name-retention-s", retention_s,
                 "seconds a task name stays reserved after its task ran or was deleted")
      ->check(CLI::Range(0, 86400 * 30));
  CLI11_PARSE(app, argc, argv);
  options.create_latency = std::chrono::milliseconds(latency_ms);
  options.name_retention = absl::Seconds(retention_s);

  auto fake = gcpstream::testing::CloudTasksFake::Start(options, port, host);
  if (!fake.ok()) {
    std::fprintf(stderr, "cloud_tasks_fake: %s\n", std::string(fake.status().message()).c_str());
    return 1;
  }
  for (const auto& q : queues) {
    if (absl::Status s = (*fake)->add_queue(q); !s.ok()) {
      std::fprintf(stderr, "cloud_tasks_fake: --queue %s: %s\n", q.c_str(),
                   std::string(s.message()).c_str());
      return 2;
    }
  }
  std::signal(SIGINT, [](int) { g_stop = true; });
  std::signal(SIGTERM, [](int) { g_stop = true; });
  std::printf("cloud_tasks_fake listening on %s\n", (*fake)->endpoint().c_str());
  std::fflush(stdout);
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  (*fake)->shutdown();
  return 0;
}
