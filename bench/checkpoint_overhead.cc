// Throughput of one stateless pipeline (sequence -> map -> key_by -> map -> sink) without
// checkpoints, with checkpoints every 1 s and every 100 ms (written to a temporary directory
// with fsync), interleaved in the same run. Parallelism 1 gives two subtasks (one per side of
// the exchange), which is what a 2-core machine runs without contention; the CPU-time ratio is
// printed beside the wall-clock one because the latter is noisy on a shared machine.
// Goal: >= 95 % of the no-checkpoint throughput at 100 ms.
//
//   build/bench/checkpoint_overhead [records] [parallelism]   (default 50,000,000 and 1)
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "bench/bench_util.h"
#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/stream_execution_environment.h"

namespace {

std::atomic<std::int64_t> g_sum{0};

struct Rate {
  double per_s;
  double per_cpu_s;
};

Rate Run(std::int64_t n, int parallelism, std::chrono::milliseconds interval,
         std::int64_t* checkpoints) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("gcpstream-bench-cp-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  gcpstream::StreamExecutionEnvironment env;
  env.set_parallelism(parallelism);
  if (interval.count() > 0) {
    env.enable_checkpointing(interval);
    env.config().checkpointing.directory = dir.string();
  }
  auto sink = std::make_shared<gcpstream::ForEachSink<std::int64_t>>(
      [](const std::int64_t& v) { g_sum.fetch_add(v, std::memory_order_relaxed); });
  env.from_source(std::make_shared<gcpstream::NumberSequenceSource>(0, n - 1, 16),
                  gcpstream::WatermarkStrategy<std::int64_t>::no_watermarks(), "sequence")
      .map([](std::int64_t v) { return v * 3; }, "triple")
      .key_by([](const std::int64_t& v) { return v & 255; })
      .map([](std::int64_t v) { return v + 1; }, "inc")
      .sink_to(sink, "sum");
  gcpstream::runtime::JobResult result;
  auto m = gcpstream::bench::Measure([&] { result = env.execute("checkpoint_overhead"); });
  if (!result.status.ok()) {
    std::fprintf(stderr, "job failed: %s\n", result.status.ToString().c_str());
    std::exit(1);
  }
  *checkpoints = result.last_completed_checkpoint.value_or(0);
  std::filesystem::remove_all(dir);
  return {static_cast<double>(n) / m.wall_s, static_cast<double>(n) / m.cpu_s};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 50'000'000;
  const int parallelism = argc > 2 ? std::atoi(argv[2]) : 1;
  constexpr int kRepetitions = 5;
  const std::chrono::milliseconds intervals[] = {0ms, 1000ms, 100ms};
  std::int64_t cps = 0;
  Run(n / 10, parallelism, 0ms, &cps);  // warm-up
  std::vector<std::vector<double>> rates(3), cpu_rates(3);
  std::vector<std::int64_t> checkpoints(3);
  for (int rep = 0; rep < kRepetitions; ++rep) {
    for (int i = 0; i < 3; ++i) {
      Rate r = Run(n, parallelism, intervals[i], &checkpoints[i]);
      rates[i].push_back(r.per_s);
      cpu_rates[i].push_back(r.per_cpu_s);
    }
  }
  const double base = gcpstream::bench::Median(rates[0]);
  const double cpu_base = gcpstream::bench::Median(cpu_rates[0]);
  std::printf("records: %lld, parallelism %d, %d interleaved repetitions after a warm-up\n",
              static_cast<long long>(n), parallelism, kRepetitions);
  std::printf("%-14s %12s %9s %16s %9s %6s\n", "checkpoints", "records/s", "vs none",
              "records/CPU-s", "vs none", "count");
  const char* names[] = {"none", "every 1 s", "every 100 ms"};
  for (int i = 0; i < 3; ++i) {
    const double r = gcpstream::bench::Median(rates[i]);
    const double c = gcpstream::bench::Median(cpu_rates[i]);
    const double spread = gcpstream::bench::Spread(rates[i]);
    std::printf("%-14s %12.0f %9.3f %16.0f %9.3f %6lld   (spread %.0f%%)%s\n", names[i], r,
                r / base, c, c / cpu_base, static_cast<long long>(checkpoints[i]), 100 * spread,
                spread > 0.10 ? "  inconclusive: spread > 10%" : "");
  }
  std::printf("checksum %lld\n", static_cast<long long>(g_sum.load()));
  return 0;
}
