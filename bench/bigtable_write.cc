// Writing to the Bigtable emulator: 100k rows x 10 cells x 100 B through the gcpstream sink in a
// job (sequence -> BigtableSink, flushed at end of input) against a raw MutateRows loop with the
// same batch size (100 entries) and the same concurrency (10 requests in flight = the sink's
// default max_in_flight_entries of 1,000), interleaved in the same run. Reports rows/s and
// client CPU-seconds per 100k rows (this process only; the emulator is another process).
// Goal: sink throughput >= 85 % of the raw loop.
//
// --stall: instead, peak memory while the endpoint accepts MutateRows and never answers (the
// fault proxy with a `hang` rule in front of the emulator), with max_in_flight_bytes at 16 MiB:
// the writer must stop at its cap, so RSS growth stays near 16 MiB whatever the input.
//
//   build/bench/bigtable_write [--endpoint host:port] [--rows N] [--repetitions R] [--stall]
//   (endpoint defaults to $BIGTABLE_EMULATOR_HOST)
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>

#include "bench/bench_util.h"
#include "gcpstream/bigtable/sink/bigtable_sink.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"

extern char** environ;

namespace {

using gcpstream::bench::Measure;
using gcpstream::bench::Measurement;
namespace bt = google::bigtable::v2;
namespace btadmin = google::bigtable::admin::v2;

constexpr int kBatch = 100;
constexpr int kConcurrency = 10;
constexpr int kCells = 10;
const std::string kValue(100, 'v');
constexpr char kInstance[] = "projects/bench/instances/bench";

std::string RowKey(std::int64_t i) {
  // Spread over the key space like a hashed key would be.
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08llx#%lld",
                static_cast<unsigned long long>((i * 2654435761ULL) & 0xffffffffULL),
                static_cast<long long>(i));
  return buf;
}

void FillEntry(bt::MutateRowsRequest::Entry& entry, std::int64_t i) {
  entry.set_row_key(RowKey(i));
  for (int c = 0; c < kCells; ++c) {
    auto* set = entry.add_mutations()->mutable_set_cell();
    set->set_family_name("f");
    set->set_column_qualifier("c" + std::to_string(c));
    set->set_timestamp_micros(1000);
    set->set_value(kValue);
  }
}

void CreateTable(const std::shared_ptr<grpc::Channel>& channel, const std::string& id) {
  auto admin = btadmin::BigtableTableAdmin::NewStub(channel);
  btadmin::CreateTableRequest request;
  request.set_parent(kInstance);
  request.set_table_id(id);
  (*request.mutable_table()->mutable_column_families())["f"]
      .mutable_gc_rule()
      ->set_max_num_versions(1);
  btadmin::Table table;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto s = admin->CreateTable(&ctx, request, &table);
  if (!s.ok() && s.error_code() != grpc::StatusCode::ALREADY_EXISTS) {
    std::fprintf(stderr, "CreateTable failed: %s\n", s.error_message().c_str());
    std::exit(1);
  }
}

// Raw loop: kConcurrency threads, each sending blocking MutateRows calls of kBatch entries.
void RawWrite(const std::shared_ptr<grpc::Channel>& channel, const std::string& table,
              std::int64_t n) {
  auto stub = bt::Bigtable::NewStub(channel);
  std::atomic<std::int64_t> next{0};
  std::atomic<std::int64_t> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kConcurrency; ++t) {
    threads.emplace_back([&] {
      for (;;) {
        const std::int64_t start = next.fetch_add(kBatch);
        if (start >= n) return;
        bt::MutateRowsRequest request;
        request.set_table_name(table);
        for (std::int64_t i = start; i < std::min(n, start + kBatch); ++i) {
          FillEntry(*request.add_entries(), i);
        }
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
        auto reader = stub->MutateRows(&ctx, request);
        bt::MutateRowsResponse response;
        while (reader->Read(&response)) {
          for (const auto& e : response.entries()) failed += e.status().code() != 0 ? 1 : 0;
        }
        if (!reader->Finish().ok()) failed += request.entries_size();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failed > 0) {
    std::fprintf(stderr, "raw loop: %lld entries failed\n", static_cast<long long>(failed.load()));
    std::exit(1);
  }
}

std::shared_ptr<gcpstream::bigtable::BigtableSink<std::int64_t>> MakeSink(
    const std::string& endpoint, const std::string& table_id,
    gcpstream::bigtable::BigtableWriterOptions options = {}) {
  using gcpstream::bigtable::BigtableSerializationSchema;
  using gcpstream::bigtable::RowMutationEntry;
  auto sink = gcpstream::bigtable::BigtableSink<std::int64_t>::builder()
                  .table(gcpstream::connector::TableDestination::of("bench", "bench", table_id))
                  .serializer(BigtableSerializationSchema<std::int64_t>::of(
                      [](const std::int64_t& i,
                         const gcpstream::SinkWriterContext&) -> std::optional<RowMutationEntry> {
                        RowMutationEntry e(RowKey(i));
                        for (int c = 0; c < kCells; ++c) {
                          e.set_cell("f", "c" + std::to_string(c), 1000, kValue);
                        }
                        return e;
                      }))
                  .writer_options(options)
                  .emulator_endpoint(endpoint)
                  .build();
  if (!sink.ok()) {
    std::fprintf(stderr, "%s\n", sink.status().ToString().c_str());
    std::exit(1);
  }
  return *sink;
}

gcpstream::StreamExecutionEnvironment SinkJob(
    const std::shared_ptr<gcpstream::bigtable::BigtableSink<std::int64_t>>& sink, std::int64_t n) {
  gcpstream::StreamExecutionEnvironment env;
  env.set_parallelism(1);
  env.from_source(std::make_shared<gcpstream::NumberSequenceSource>(0, n - 1, 1),
                  gcpstream::WatermarkStrategy<std::int64_t>::no_watermarks(), "sequence")
      .sink_to(sink, "bigtable");
  return env;
}

void SinkWrite(const std::string& endpoint, const std::string& table_id, std::int64_t n) {
  auto env = SinkJob(MakeSink(endpoint, table_id), n);
  auto result = env.execute("bigtable_write");
  if (!result.status.ok()) {
    std::fprintf(stderr, "sink job failed: %s\n", result.status.ToString().c_str());
    std::exit(1);
  }
}

double RssMiB() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

// Starts the fault proxy in front of `upstream`, hanging every MutateRows. Returns its pid.
pid_t StartHangingProxy(const std::string& proxy, const std::string& upstream, int port) {
  std::vector<std::string> args = {proxy,
                                   "--upstream",
                                   upstream,
                                   "--listen",
                                   std::to_string(port),
                                   "--rule",
                                   "method=MutateRows,action=hang"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, proxy.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
    std::fprintf(stderr, "cannot start %s\n", proxy.c_str());
    std::exit(1);
  }
  return pid;
}

int Stall(const std::string& endpoint, const std::string& proxy_path, std::int64_t n) {
  const int port = 18000 + static_cast<int>(getpid() % 1000);
  const pid_t proxy = StartHangingProxy(proxy_path, endpoint, port);
  const std::string proxied = "127.0.0.1:" + std::to_string(port);
  auto channel = grpc::CreateChannel(proxied, grpc::InsecureChannelCredentials());
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
    std::fprintf(stderr, "the fault proxy did not come up on %s\n", proxied.c_str());
    kill(proxy, SIGTERM);
    return 1;
  }
  CreateTable(channel, "bench-stall");  // admin calls pass through
  constexpr std::int64_t kCapMiB = 16;
  gcpstream::bigtable::BigtableWriterOptions options;
  options.max_in_flight_bytes = kCapMiB * 1024 * 1024;
  options.max_in_flight_entries = 1'000'000;  // only the byte cap binds
  auto env = SinkJob(MakeSink(proxied, "bench-stall", options), n);
  auto runner = env.create_runner("bigtable_write_stall");
  const double before = RssMiB();
  std::thread job([&] { runner->run(); });
  double peak = before;
  double peak_first_half = before;
  double in_flight_mib = 0;
  for (int i = 0; i < 100; ++i) {  // 10 s
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    peak = std::max(peak, RssMiB());
    if (i < 50) peak_first_half = peak;
    for (const auto& s : runner->metrics().snapshot()) {
      if (s.name == "inFlightBytes") in_flight_mib = s.value / (1024.0 * 1024.0);
    }
  }
  runner->cancel();
  job.join();
  kill(proxy, SIGTERM);
  waitpid(proxy, nullptr, 0);
  std::printf(
      "Bigtable sink against a MutateRows that never answers, max_in_flight_bytes %lld "
      "MiB, %lld rows offered, 10 s\n",
      static_cast<long long>(kCapMiB), static_cast<long long>(n));
  std::printf(
      "in-flight bytes (serialized) at the end: %.1f MiB; RSS before %.1f MiB, peak "
      "%.1f MiB after 5 s and %.1f MiB after 10 s; growth %.1f MiB = %.2f x the cap\n",
      in_flight_mib, before, peak_first_half, peak, peak - before, (peak - before) / kCapMiB);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Bigtable write benchmark"};
  std::string endpoint =
      std::getenv("BIGTABLE_EMULATOR_HOST") ? std::getenv("BIGTABLE_EMULATOR_HOST") : "";
  std::int64_t n = 100000;
  int repetitions = 3;
  bool stall = false;
  std::string only;
  std::string proxy = FAULT_PROXY_PATH;
  app.add_option("--endpoint", endpoint);
  app.add_option("--rows", n);
  app.add_option("--repetitions", repetitions);
  app.add_option("--only", only, "run one side only, for profiling: sink or raw")
      ->check(CLI::IsMember({"sink", "raw"}));
  app.add_flag("--stall", stall, "measure peak memory against a stalled endpoint");
  app.add_option("--fault-proxy", proxy, "the fault_proxy program (--stall)");
  std::int64_t warmup = 0;
  app.add_option("--warmup", warmup, "with --only: rows written first, outside the measurement");
  CLI11_PARSE(app, argc, argv);
  if (endpoint.empty()) {
    std::fprintf(stderr, "set --endpoint or BIGTABLE_EMULATOR_HOST (scripts/emulators.sh start)\n");
    return 2;
  }
  if (stall) return Stall(endpoint, proxy, 10'000'000);

  auto channel = grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials());
  const std::string table_id = "bench-write";
  const std::string table = std::string(kInstance) + "/tables/" + table_id;
  CreateTable(channel, table_id);
  if (!only.empty()) {
    auto run = [&](std::int64_t count) {
      return only == "raw" ? Measure([&] { RawWrite(channel, table, count); })
                           : Measure([&] { SinkWrite(endpoint, table_id, count); });
    };
    if (warmup > 0) run(warmup);
    Measurement m = run(n);
    std::printf("%s: %.0f rows/s, %.3f CPU-s per 100k rows\n", only.c_str(), n / m.wall_s,
                m.cpu_s * 100000.0 / n);
    gcpstream::bench::PrintResult("bigtable_write", only == "raw" ? "raw" : "gcpstream", n, m);
    return 0;
  }
  RawWrite(channel, table, n / 4);  // warm-up of both paths
  SinkWrite(endpoint, table_id, n / 4);
  std::vector<double> raw_rate, raw_cpu, sink_rate, sink_cpu;
  for (int r = 0; r < repetitions; ++r) {
    Measurement raw = Measure([&] { RawWrite(channel, table, n); });
    raw_rate.push_back(n / raw.wall_s);
    raw_cpu.push_back(raw.cpu_s * 100000.0 / n);
    Measurement s = Measure([&] { SinkWrite(endpoint, table_id, n); });
    sink_rate.push_back(n / s.wall_s);
    sink_cpu.push_back(s.cpu_s * 100000.0 / n);
  }
  using gcpstream::bench::Median;
  using gcpstream::bench::Spread;
  std::printf(
      "Bigtable write, %lld rows x %d cells x %zu B, batches of %d, %d in flight; "
      "%d interleaved repetitions after a warm-up; medians (spread)\n",
      static_cast<long long>(n), kCells, kValue.size(), kBatch, kConcurrency, repetitions);
  std::printf("%-22s %12s %22s\n", "client", "rows/s", "CPU-s per 100k rows");
  std::printf("%-22s %12.0f %22.3f   (spread %.0f%% / %.0f%%)\n", "raw MutateRows loop",
              Median(raw_rate), Median(raw_cpu), 100 * Spread(raw_rate), 100 * Spread(raw_cpu));
  std::printf("%-22s %12.0f %22.3f   (spread %.0f%% / %.0f%%)\n", "gcpstream sink (job)",
              Median(sink_rate), Median(sink_cpu), 100 * Spread(sink_rate), 100 * Spread(sink_cpu));
  const double ratio = Median(sink_rate) / Median(raw_rate);
  std::printf(
      "sink / raw throughput: %.3f  (goal >= 0.85)%s\n", ratio,
      std::max(Spread(raw_rate), Spread(sink_rate)) > 0.10 ? "  inconclusive: spread > 10%" : "");
  std::printf("sink / raw CPU per row: %.3f\n", Median(sink_cpu) / Median(raw_cpu));
  return 0;
}
