// The BigQuery fake as a standalone program, to point the CLI or a client at:
//
//   bigquery_fake --grpc-port 9060 --rest-port 9050 --dataset my-project:my_dataset
//                 --bucket my-staging-bucket
//
// The Storage Write and Storage Read APIs are served over gRPC on --grpc-port, the v2 REST calls
// on --rest-port, next to the Cloud Storage JSON API subset (uploads, get, list, delete; see
// tests/fakes/bigquery/bigquery_fake.h for what is served; fill a table to read with
// POST .../tables/T/insertAll). Faults and the clock can be
// changed while it runs through POST /fake/v1/options and /fake/v1/clock:advance. It prints
// "bigquery_fake grpc HOST:PORT rest http://HOST:PORT" once ready and runs until SIGINT or
// SIGTERM.
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <thread>

#include "tests/fakes/bigquery/bigquery_fake.h"

namespace {
std::atomic<bool> g_stop{false};
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A fake BigQuery: Storage Write and Read APIs (gRPC) and the v2 table calls (REST)"};
  int grpc_port = 0;
  int rest_port = 0;
  std::string host = "127.0.0.1";
  std::vector<std::string> datasets;
  std::int64_t propagation_ms = 0;
  std::int64_t idle_expiry_s = 7 * 24 * 3600;
  std::int64_t append_latency_ms = 0;
  app.add_option("--grpc-port", grpc_port, "Storage Write API port (0: any free port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--rest-port", rest_port, "REST port (0: any free port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--host", host, "address to listen on");
  app.add_option("--dataset", datasets, "a dataset to create at start (PROJECT:DATASET)");
  std::vector<std::string> buckets;
  app.add_option("--bucket", buckets,
                 "a Cloud Storage bucket to create at start (served on the REST port)");
  app.add_option("--table-propagation-ms", propagation_ms,
                 "how long a new table answers the masked PERMISSION_DENIED to writes")
      ->check(CLI::Range(0, 3600 * 1000));
  app.add_option("--stream-idle-expiry-s", idle_expiry_s,
                 "seconds an unused application-created stream lives")
      ->check(CLI::Range(1, 365 * 24 * 3600));
  app.add_option("--append-latency-ms", append_latency_ms,
                 "how long every AppendRows request waits before it is processed")
      ->check(CLI::Range(0, 60 * 1000));
  CLI11_PARSE(app, argc, argv);

  gcpstream::testing::FakeOptions options;
  options.table_propagation = absl::Milliseconds(propagation_ms);
  options.stream_idle_expiry = absl::Seconds(idle_expiry_s);
  options.append_latency = std::chrono::milliseconds(append_latency_ms);
  auto fake = gcpstream::testing::BigQueryFake::Start(options, grpc_port, rest_port, host);
  if (!fake.ok()) {
    std::fprintf(stderr, "bigquery_fake: %s\n", std::string(fake.status().message()).c_str());
    return 1;
  }
  for (const auto& d : datasets) {
    const auto colon = d.find(':');
    absl::Status s = colon == std::string::npos
                         ? absl::InvalidArgumentError("expected PROJECT:DATASET")
                         : (*fake)->add_dataset(d.substr(0, colon), d.substr(colon + 1));
    if (!s.ok()) {
      std::fprintf(stderr, "bigquery_fake: --dataset %s: %s\n", d.c_str(),
                   std::string(s.message()).c_str());
      return 2;
    }
  }
  for (const auto& b : buckets) (*fake)->add_bucket(b);
  std::signal(SIGINT, [](int) { g_stop = true; });
  std::signal(SIGTERM, [](int) { g_stop = true; });
  std::printf("bigquery_fake grpc %s rest %s\n", (*fake)->grpc_endpoint().c_str(),
              (*fake)->rest_endpoint().c_str());
  std::fflush(stdout);
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  (*fake)->shutdown();
  return 0;
}
