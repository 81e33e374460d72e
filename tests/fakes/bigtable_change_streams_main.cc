// The Bigtable change-stream fake as a standalone program, to point the CLI or the change
// stream source at:
//
//   bigtable_change_streams_fake --port 8124 --table projects/p/instances/i/tables/t
//       [--boundaries g,p] [--split-every-s S]
//
// then `emulator_endpoint: 127.0.0.1:8124` in a pipeline's bigtable_change_stream source. Write
// to the table through MutateRow/MutateRows on the same port (the bigtable sink, or `cbt`).
// --split-every-s alternately splits and merges the partitions every S seconds, to watch a job
// follow the topology. It prints "listening on HOST:PORT" once ready and runs until SIGINT or
// SIGTERM.
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <thread>

#include "absl/strings/str_split.h"
#include "tests/fakes/bigtable_change_streams.h"

namespace {
std::atomic<bool> g_stop{false};
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A fake Bigtable data service serving change streams (google.bigtable.v2)"};
  int port = 0;
  std::string host = "127.0.0.1";
  std::vector<std::string> tables;
  std::string boundaries;
  int split_every_s = 0;
  std::size_t chunk_bytes = 1 << 20;
  app.add_option("--port", port, "port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--host", host, "address to listen on");
  app.add_option("--table", tables, "a table to serve (projects/P/instances/I/tables/T)")
      ->required();
  app.add_option("--boundaries", boundaries,
                 "comma-separated row keys splitting the key space into the initial partitions");
  app.add_option("--split-every-s", split_every_s,
                 "split the first partition, then merge it back, every S seconds (0: never)")
      ->check(CLI::Range(0, 86400));
  app.add_option("--chunk-bytes", chunk_bytes, "SetCell values above this are sent chunked")
      ->check(CLI::Range(1, 256 << 20));
  CLI11_PARSE(app, argc, argv);

  gcpstream::testing::BigtableChangeStreamsFakeOptions options;
  options.max_value_chunk_bytes = chunk_bytes;
  auto fake = gcpstream::testing::BigtableChangeStreamsFake::Start(options, port, host);
  if (!fake.ok()) {
    std::fprintf(stderr, "bigtable_change_streams_fake: %s\n",
                 std::string(fake.status().message()).c_str());
    return 1;
  }
  for (const auto& t : tables) (*fake)->add_table(t);
  if (!boundaries.empty()) {
    std::vector<std::string> keys = absl::StrSplit(boundaries, ',');
    if (absl::Status s = (*fake)->repartition(keys); !s.ok()) {
      std::fprintf(stderr, "bigtable_change_streams_fake: --boundaries: %s\n",
                   std::string(s.message()).c_str());
      return 2;
    }
  }
  std::signal(SIGINT, [](int) { g_stop = true; });
  std::signal(SIGTERM, [](int) { g_stop = true; });
  std::printf("bigtable_change_streams_fake listening on %s\n", (*fake)->endpoint().c_str());
  std::fflush(stdout);
  int ticks = 0;
  bool split = false;
  while (!g_stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (split_every_s > 0 && ++ticks % (split_every_s * 10) == 0) {
      // "m" is inside the first partition unless a boundary sits at or below it.
      absl::Status s = split ? (*fake)->merge_at("m") : (*fake)->split_at("m");
      if (s.ok()) split = !split;
    }
  }
  (*fake)->shutdown();
  return 0;
}
