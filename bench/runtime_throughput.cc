// Throughput of the engine itself: 64-byte records from a sequence source through a map into a
// sink that consumes them, chained in one subtask and across a key_by exchange, at parallelism
// 1 and 2. The baseline is the same work as a plain loop on one thread, measured in the same run;
// the ratio says what the runtime costs on top of the work.
//
// A second table measures the live dashboard (docs/dashboard.md): the chained p=1 job with the
// dashboard serving and a client polling the page's six endpoints once per second, against the
// same job without a dashboard, interleaved in the same run (5x the records, so each run spans
// several polls).
//
//   build/bench/runtime_throughput [records]     (default 20,000,000)
#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "bench/bench_util.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/stream_execution_environment.h"

namespace gcpstream::bench {
namespace {

struct Record64 {
  std::int64_t seq;
  char payload[56];
};
static_assert(sizeof(Record64) == 64);

Record64 MakeRecord(std::int64_t seq) {
  Record64 r;
  r.seq = seq;
  std::memset(r.payload, static_cast<int>(seq & 0x7f), sizeof(r.payload));
  return r;
}

Record64 Transform(Record64 r) {
  r.payload[0] = static_cast<char>(r.payload[0] + 1);
  return r;
}

std::atomic<std::int64_t> g_checksum{0};

// Consumes every record (sums a field so nothing is optimized away).
class BlackholeSink final : public Sink<Record64> {
 public:
  absl::StatusOr<std::unique_ptr<SinkWriter<Record64>>> create_writer(
      WriterInitContext&) const override {
    class Writer final : public SinkWriter<Record64> {
     public:
      absl::Status write(const Record64& r, const SinkWriterContext&) override {
        sum_ += r.seq + r.payload[0];
        return absl::OkStatus();
      }
      absl::Status flush(bool) override {
        g_checksum.fetch_add(sum_);
        sum_ = 0;
        return absl::OkStatus();
      }
      absl::Status close() override { return absl::OkStatus(); }

     private:
      std::int64_t sum_ = 0;
    };
    return std::unique_ptr<SinkWriter<Record64>>(new Writer());
  }
};

// The same per-record work on one thread with no runtime. The empty asm keeps the compiler
// from vectorizing across records, so the loop does one record at a time as the job does.
void RunBaseline(std::int64_t n) {
  std::int64_t sum = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    Record64 r = Transform(MakeRecord(i));
    asm volatile("" : : "r"(&r) : "memory");
    sum += r.seq + r.payload[0];
  }
  g_checksum.fetch_add(sum);
}

// What the dashboard page does while it is open: every second, the six documents it reads.
void PollDashboard(gcpstream::runtime::JobRunner& runner, const std::atomic<bool>& done,
                   std::atomic<std::int64_t>& polls) {
  while (runner.ui_port() == 0 && !done.load())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const int port = runner.ui_port();
  if (port == 0) return;
  httplib::Client client("127.0.0.1", port);
  const std::string base = "/jobs/" + runner.job_id();
  while (!done.load()) {
    for (const char* path :
         {"", "/checkpoints", "/history", "/exceptions", "/watermarks", "/metrics"}) {
      auto res = client.Get(base + path);
      if (!res || res->status != 200) {
        std::fprintf(stderr, "dashboard poll %s failed\n", path);
        std::exit(1);
      }
    }
    polls.fetch_add(1);
    for (int i = 0; i < 100 && !done.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::atomic<std::int64_t> g_polls{0};

void RunJob(std::int64_t n, int parallelism, bool exchange, bool dashboard = false) {
  StreamExecutionEnvironment env;
  if (dashboard) env.config().ui_port = 0;
  env.set_parallelism(parallelism);
  auto stream = env.from_source(std::make_shared<NumberSequenceSource>(0, n - 1, 8 * parallelism),
                                WatermarkStrategy<std::int64_t>::no_watermarks(), "sequence")
                    .map([](std::int64_t i) { return MakeRecord(i); }, "make");
  auto sink = std::make_shared<BlackholeSink>();
  if (exchange) {
    stream.key_by([](const Record64& r) { return r.seq & 1023; })
        .map(Transform, "transform")
        .sink_to(sink, "blackhole");
  } else {
    stream.map(Transform, "transform").sink_to(sink, "blackhole");
  }
  auto runner = env.create_runner("runtime_throughput");
  std::atomic<bool> done{false};
  std::thread poller;
  if (dashboard) poller = std::thread([&] { PollDashboard(*runner, done, g_polls); });
  auto result = runner->run();
  done.store(true);
  if (poller.joinable()) poller.join();
  if (!result.status.ok()) {
    std::fprintf(stderr, "job failed: %s\n", result.status.ToString().c_str());
    std::exit(1);
  }
}

}  // namespace
}  // namespace gcpstream::bench

int main(int argc, char** argv) {
  using namespace gcpstream::bench;
  const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 20'000'000;
  constexpr int kRepetitions = 3;
  struct Case {
    const char* name;
    int parallelism;
    bool exchange;
  };
  const Case cases[] = {{"chained     p=1", 1, false},
                        {"chained     p=2", 2, false},
                        {"key_by      p=1", 1, true},
                        {"key_by      p=2", 2, true}};
  // Warm-up, then the baseline and the cases interleaved, kRepetitions each.
  RunBaseline(n / 10);
  RunJob(n / 10, 1, false);
  std::vector<double> base_rate;
  std::vector<std::vector<double>> rate(std::size(cases));
  std::vector<std::vector<double>> per_core(std::size(cases));
  for (int rep = 0; rep < kRepetitions; ++rep) {
    Measurement b = Measure([&] { RunBaseline(n); });
    base_rate.push_back(n / b.wall_s);
    for (std::size_t c = 0; c < std::size(cases); ++c) {
      Measurement m = Measure([&] { RunJob(n, cases[c].parallelism, cases[c].exchange); });
      rate[c].push_back(n / m.wall_s);
      per_core[c].push_back(n / m.cpu_s);
    }
  }
  const double base = Median(base_rate);
  std::printf("records: %lld x 64 B, %d repetitions after a warm-up; medians (spread)\n",
              static_cast<long long>(n), kRepetitions);
  std::printf("%-16s %14s %18s %12s\n", "case", "records/s", "records/CPU-s", "vs loop");
  std::printf("%-16s %14.0f %18s %12s   (spread %.0f%%)\n", "plain loop", base, "-", "1.00",
              100 * Spread(base_rate));
  for (std::size_t c = 0; c < std::size(cases); ++c) {
    const double r = Median(rate[c]);
    const double pc = Median(per_core[c]);
    std::printf("%-16s %14.0f %18.0f %12.3f   (spread %.0f%%)%s\n", cases[c].name, r, pc, pc / base,
                100 * Spread(rate[c]),
                Spread(rate[c]) > 0.10 ? "  inconclusive: spread > 10%" : "");
  }

  // The dashboard's cost: the same job with and without it, interleaved; long runs so each
  // spans many page refreshes. The steadiest case (chained, p=1) so that a 1% difference is
  // above the noise; CPU per record counts the dashboard's own threads, which a single-threaded
  // job's wall time would hide on the idle second core.
  const std::int64_t dn = 20 * n;
  constexpr int kDashboardRepetitions = 5;
  std::vector<double> closed, open, closed_cpu, open_cpu;
  for (int rep = 0; rep < kDashboardRepetitions; ++rep) {
    Measurement c = Measure([&] { RunJob(dn, 1, false, false); });
    Measurement o = Measure([&] { RunJob(dn, 1, false, true); });
    closed.push_back(dn / c.wall_s);
    closed_cpu.push_back(dn / c.cpu_s);
    open.push_back(dn / o.wall_s);
    open_cpu.push_back(dn / o.cpu_s);
  }
  const double c = Median(closed), o = Median(open);
  const double cc = Median(closed_cpu), oc = Median(open_cpu);
  std::printf("\ndashboard, chained p=1, %lld records per run, %d runs each, %lld page refreshes\n",
              static_cast<long long>(dn), kDashboardRepetitions,
              static_cast<long long>(g_polls.load()));
  std::printf("%-16s %14s %10s %18s %10s\n", "case", "records/s", "ratio", "records/CPU-s",
              "ratio");
  std::printf("%-16s %14.0f %10s %18.0f %10s   (spread %.0f%% / %.0f%%)\n", "no dashboard", c,
              "1.000", cc, "1.000", 100 * Spread(closed), 100 * Spread(closed_cpu));
  std::printf("%-16s %14.0f %10.3f %18.0f %10.3f   (spread %.0f%% / %.0f%%)\n", "page open", o,
              o / c, oc, oc / cc, 100 * Spread(open), 100 * Spread(open_cpu));
  std::printf("checksum %lld\n", static_cast<long long>(g_checksum.load()));
  return 0;
}
