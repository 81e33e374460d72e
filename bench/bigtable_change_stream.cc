// Bigtable change-stream source benchmark, against the change-stream fake run as a separate
// process (the emulator cannot serve change streams): a backlog of mutations over four
// partitions, read to the end by (a) raw ReadChangeStream loops, one thread per partition,
// counting complete changes, and (b) a job reading BigtableChangeStreamSource at parallelism 1
// with one stream per partition, whose deserializer emits one record per mutation. Interleaved
// repetitions after a warm-up; medians. Both readers talk to the same fake on this machine, so
// the ratio, not the absolute rate, is the result; CPU counts this process only (the fake runs
// apart).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <thread>

#include "bench/bench_util.h"
#include "gcpstream/bigtable/changestream/bigtable_change_stream_source.h"
#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "google/protobuf/util/time_util.h"

namespace {

namespace v2 = google::bigtable::v2;
using gcpstream::bench::Measure;
using gcpstream::bench::Measurement;
using gcpstream::bench::Median;
using gcpstream::bench::Spread;

constexpr char kTable[] = "projects/bench/instances/i/tables/t";

struct Fake {
  pid_t pid = -1;
  std::string endpoint;
  ~Fake() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      waitpid(pid, nullptr, 0);
    }
  }
};

void StartFake(Fake& fake) {
  const std::string log = "/tmp/bigtable_change_stream_bench_fake." + std::to_string(getpid());
  fake.pid = fork();
  if (fake.pid == 0) {
    if (std::freopen(log.c_str(), "w", stdout) == nullptr) _exit(126);
    execl(BIGTABLE_CHANGE_STREAMS_FAKE_PATH, BIGTABLE_CHANGE_STREAMS_FAKE_PATH, "--port", "0",
          "--table", kTable, "--boundaries", "g,n,t", static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 500 && fake.endpoint.empty(); ++i) {
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const auto at = text.find("listening on ");
    const auto eol = text.find('\n', at);
    if (at != std::string::npos && eol != std::string::npos) {
      fake.endpoint = text.substr(at + 13, eol - at - 13);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::remove(log.c_str());
  if (fake.endpoint.empty()) {
    std::fprintf(stderr, "the change-stream fake did not start (%s)\n",
                 BIGTABLE_CHANGE_STREAMS_FAKE_PATH);
    std::exit(1);
  }
}

// `n` mutations of one 100-byte cell each, spread over 26 x 40 rows.
void Backlog(const std::string& endpoint, std::int64_t n) {
  auto stub =
      v2::Bigtable::NewStub(grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
  for (std::int64_t done = 0; done < n;) {
    v2::MutateRowsRequest request;
    request.set_table_name(kTable);
    for (int i = 0; i < 1000 && done < n; ++i, ++done) {
      auto* e = request.add_entries();
      e->set_row_key(std::string(1, static_cast<char>('a' + done % 26)) + "-" +
                     std::to_string(done % 40));
      auto* c = e->add_mutations()->mutable_set_cell();
      c->set_family_name("f");
      c->set_column_qualifier("q");
      c->set_timestamp_micros(-1);
      c->set_value(std::string(100, 'v'));
    }
    grpc::ClientContext ctx;
    auto reader = stub->MutateRows(&ctx, request);
    v2::MutateRowsResponse response;
    while (reader->Read(&response)) {
    }
    if (!reader->Finish().ok()) {
      std::fprintf(stderr, "writing the backlog failed\n");
      std::exit(1);
    }
  }
}

std::int64_t Raw(const std::string& endpoint, absl::Time start, std::int64_t want) {
  auto stub =
      v2::Bigtable::NewStub(grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
  auto partitions = gcpstream::bigtable::ListChangeStreamPartitions(*stub, kTable, "bench");
  if (!partitions.ok()) std::exit(1);
  std::atomic<std::int64_t> changes{0};
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::thread> threads;
  std::mutex mu;
  for (const auto& p : *partitions) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    grpc::ClientContext* ctx = contexts.back().get();
    threads.emplace_back([&, p, ctx] {
      gcpstream::bigtable::BigtableChangeStreamSplit split;
      split.partition = p;
      split.start_time = start;
      gcpstream::bigtable::ChangeStreamRequestBase base;
      base.table_name = kTable;
      base.app_profile_id = "bench";
      auto reader = stub->ReadChangeStream(
          ctx, gcpstream::bigtable::BuildReadChangeStreamRequest(base, split));
      v2::ReadChangeStreamResponse r;
      while (reader->Read(&r)) {
        if (r.has_data_change() && r.data_change().done()) changes.fetch_add(1);
      }
      (void)reader->Finish();
    });
  }
  while (changes.load() < want) std::this_thread::sleep_for(std::chrono::microseconds(200));
  for (auto& ctx : contexts) ctx->TryCancel();
  for (auto& t : threads) t.join();
  return changes.load();
}

std::int64_t Source(const std::string& endpoint, absl::Time start, std::int64_t want) {
  using gcpstream::bigtable::BigtableChangeStreamMutation;
  auto source = gcpstream::bigtable::BigtableChangeStreamSource<std::int64_t>::builder()
                    .table(gcpstream::connector::TableDestination::of("bench", "i", "t"))
                    .app_profile_id("bench")
                    .start_position(gcpstream::connector::StartPosition::absolute(start))
                    .max_concurrent_streams_per_subtask(4)
                    .deserializer([](const BigtableChangeStreamMutation& m,
                                     gcpstream::Collector<std::int64_t>& out) -> absl::Status {
                      out.collect(static_cast<std::int64_t>(m.entries().size()));
                      return absl::OkStatus();
                    })
                    .emulator_endpoint(endpoint)
                    .build();
  if (!source.ok()) std::exit(1);
  auto changes = std::make_shared<std::atomic<std::int64_t>>(0);
  gcpstream::StreamExecutionEnvironment env;
  env.set_parallelism(1);
  env.from_source(*source, gcpstream::WatermarkStrategy<std::int64_t>::no_watermarks(), "changes")
      .sink_to(std::make_shared<gcpstream::ForEachSink<std::int64_t>>(
                   [changes](const std::int64_t&) { changes->fetch_add(1); }),
               "count");
  auto runner = env.create_runner("bigtable-changes-bench");
  std::thread watcher([&] {
    while (changes->load() < want) std::this_thread::sleep_for(std::chrono::microseconds(200));
    runner->cancel();
  });
  (void)runner->run();
  watcher.join();
  return changes->load();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Bigtable change-stream source benchmark (against the change-stream fake)"};
  std::int64_t n = 100000;
  int repetitions = 3;
  app.add_option("--changes", n, "mutations in the backlog read by each reader");
  app.add_option("--repetitions", repetitions);
  CLI11_PARSE(app, argc, argv);
  Fake fake;
  StartFake(fake);
  const absl::Time start = absl::Now() - absl::Seconds(1);
  Backlog(fake.endpoint, n);
  auto once = [&](bool source) {
    std::int64_t got = 0;
    Measurement m = Measure(
        [&] { got = source ? Source(fake.endpoint, start, n) : Raw(fake.endpoint, start, n); });
    if (got < n) {
      std::fprintf(stderr, "%s read %lld changes, want %lld\n", source ? "source" : "raw",
                   static_cast<long long>(got), static_cast<long long>(n));
      std::exit(1);
    }
    return m;
  };
  std::printf(
      "Bigtable change stream on the fake, a backlog of %lld mutations (one 100-byte cell each) "
      "over 4 partitions, %d interleaved repetitions after a warm-up; medians (spread)\n",
      static_cast<long long>(n), repetitions);
  std::printf("%-38s %12s %24s\n", "reader", "changes/s", "CPU-s per 100k changes");
  once(false);
  once(true);
  const auto c = gcpstream::bench::Interleave(
      repetitions, static_cast<double>(n), [&] { return once(false); }, [&] { return once(true); });
  gcpstream::bench::PrintRow("raw ReadChangeStream threads", c.base_rate, c.base_cpu);
  gcpstream::bench::PrintRow("gcpstream BigtableChangeStreamSource", c.rate, c.cpu);
  std::printf(
      "source / raw changes/s %.3f (goal >= 0.85)%s; CPU per change %.3f. CPU counts this "
      "process only (the fake runs apart).\n",
      Median(c.rate) / Median(c.base_rate),
      std::max(Spread(c.base_rate), Spread(c.rate)) > 0.10 ? " inconclusive: spread > 10%" : "",
      Median(c.cpu) / Median(c.base_cpu));
  return 0;
}
