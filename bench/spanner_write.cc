// Writing Spanner rows with BatchWrite through the in-repo stand-in (a separate process, so only
// the client's CPU is measured), in front of the Spanner emulator: the gcpstream sink in a job
// (sequence -> mutation -> SpannerSink, flushed at end of input) against a raw BatchWrite loop
// over the same generated stub, interleaved in the same run. Both send 500 mutations (one per
// group) per request with up to 16 requests in flight, which is what the sink's defaults do.
//
// By default the stand-in answers every group OK without committing it (--no-apply): the
// emulator commits about one group per millisecond, which would make both sides measure the
// emulator. --apply measures through it instead. Reports rows/s and client CPU-seconds per 100k
// rows. Goal: sink >= 85 % of raw. Needs SPANNER_EMULATOR_HOST (scripts/emulators.sh).
//
//   build/bench/spanner_write [--rows N] [--repetitions R] [--apply] [--only sink|raw]
//                             [--warmup W]
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "bench/bench_util.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "gcpstream/spanner/sink/spanner_sink.h"
#include "google/spanner/v1/spanner.grpc.pb.h"

namespace {

using gcpstream::bench::Measure;
using gcpstream::bench::Measurement;
namespace sp = google::spanner::v1;
using gcpstream::spanner::Mutation;
using gcpstream::spanner::Value;

constexpr int kConcurrency = 16;
constexpr int kBatch = 500;
const std::string kNote(200, 'x');
const auto kDb = gcpstream::connector::DatabaseDestination::of("bench", "bench", "rows");

Mutation Row(std::int64_t i) {
  auto m = Mutation::InsertOrUpdate("BenchRows")
               .Set("Id", Value::Int64(i))
               .Set("Amount", Value::Float64(static_cast<double>(i) / 7))
               .Set("Note", Value::String(kNote))
               .Build();
  return *std::move(m);
}

// Starts the stand-in binary on a free port, creating the database; returns pid and endpoint.
std::pair<pid_t, std::string> StartStandIn(const std::string& emulator, bool apply) {
  int out[2];
  if (pipe(out) != 0) std::exit(1);
  const std::string db = kDb.resource_name();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    const char* ddl = "/tmp/gcpstream-bench-spanner.ddl";
    if (FILE* f = std::fopen(ddl, "w")) {
      std::fputs(
          "CREATE TABLE BenchRows (Id INT64 NOT NULL, Amount FLOAT64, Note STRING(MAX)) PRIMARY "
          "KEY "
          "(Id);",
          f);
      std::fclose(f);
    }
    if (apply) {
      execl(SPANNER_STANDIN_PATH, SPANNER_STANDIN_PATH, "--emulator", emulator.c_str(),
            "--database", db.c_str(), "--ddl-file", ddl, static_cast<char*>(nullptr));
    } else {
      execl(SPANNER_STANDIN_PATH, SPANNER_STANDIN_PATH, "--emulator", emulator.c_str(),
            "--database", db.c_str(), "--ddl-file", ddl, "--no-apply", static_cast<char*>(nullptr));
    }
    _exit(127);
  }
  close(out[1]);
  FILE* in = fdopen(out[0], "r");
  char line[512] = {};
  while (in != nullptr && std::fgets(line, sizeof line, in) != nullptr) {
    std::string text(line);
    if (text.find("listening on") == std::string::npos) continue;
    const auto at = text.rfind(' ');
    return {pid, text.substr(at + 1, text.find_last_not_of("\r\n") - at)};
  }
  std::fprintf(stderr, "the stand-in (%s) did not start\n", SPANNER_STANDIN_PATH);
  std::exit(1);
}

void Raw(const std::string& endpoint, std::int64_t n) {
  auto stub =
      sp::Spanner::NewStub(grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
  std::vector<std::string> sessions;
  {
    sp::BatchCreateSessionsRequest request;
    request.set_database(kDb.resource_name());
    request.set_session_count(kConcurrency);
    sp::BatchCreateSessionsResponse response;
    grpc::ClientContext ctx;
    if (!stub->BatchCreateSessions(&ctx, request, &response).ok()) std::exit(1);
    for (const auto& s : response.session()) sessions.push_back(s.name());
  }
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> free_sessions = sessions;
  std::int64_t failed = 0;
  for (std::int64_t start = 0; start < n; start += kBatch) {
    struct Call : grpc::ClientReadReactor<sp::BatchWriteResponse> {
      grpc::ClientContext ctx;
      sp::BatchWriteRequest request;
      sp::BatchWriteResponse response;
      std::function<void(bool)> done;
      bool ok = true;
      void OnReadDone(bool read) override {
        if (!read) return;
        if (response.status().code() != 0) ok = false;
        StartRead(&response);
      }
      // The call is deleted before its completion is announced, so the loop below never
      // returns (destroying the stub) while a call is still being torn down.
      void OnDone(const grpc::Status& s) override {
        auto announce = std::move(done);
        const bool succeeded = ok && s.ok();
        delete this;
        announce(succeeded);
      }
    };
    auto* call = new Call();
    for (std::int64_t i = start; i < std::min(n, start + kBatch); ++i) {
      *call->request.add_mutation_groups()->add_mutations() = Row(i).release_proto();
    }
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return !free_sessions.empty(); });
      call->request.set_session(free_sessions.back());
      free_sessions.pop_back();
    }
    call->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    call->done = [session = call->request.session(), &mu, &cv, &free_sessions, &failed](bool ok) {
      std::lock_guard lock(mu);
      if (!ok) ++failed;
      free_sessions.push_back(session);
      cv.notify_all();
    };
    stub->async()->BatchWrite(&call->ctx, &call->request, call);
    call->StartRead(&call->response);
    call->StartCall();
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return free_sessions.size() == sessions.size(); });
  if (failed > 0) {
    std::fprintf(stderr, "raw loop: %lld requests failed\n", static_cast<long long>(failed));
    std::exit(1);
  }
}

void Sink(const std::string& endpoint, std::int64_t n) {
  gcpstream::StreamExecutionEnvironment env;
  env.set_parallelism(1);
  gcpstream::spanner::SpannerWriterOptions options;
  options.max_sessions = kConcurrency;
  options.max_batch_mutations = kBatch;
  options.max_batch_cells = 80000;
  options.max_batch_bytes = 104857600;
  options.max_in_flight_mutations = kConcurrency * kBatch;
  auto sink = gcpstream::spanner::SpannerSink<std::int64_t>::builder()
                  .database(kDb)
                  .serializer([](const std::int64_t& i, const gcpstream::SinkWriterContext&)
                                  -> absl::StatusOr<std::optional<Mutation>> { return Row(i); })
                  .writer_options(options)
                  .emulator_endpoint(endpoint)
                  .build();
  if (!sink.ok()) {
    std::fprintf(stderr, "%s\n", sink.status().ToString().c_str());
    std::exit(1);
  }
  env.from_source(std::make_shared<gcpstream::NumberSequenceSource>(0, n - 1, 1),
                  gcpstream::WatermarkStrategy<std::int64_t>::no_watermarks(), "sequence")
      .sink_to(*sink, "rows");
  auto result = env.execute("spanner_write");
  if (!result.status.ok()) {
    std::fprintf(stderr, "sink job failed: %s\n", result.status.ToString().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Spanner BatchWrite benchmark (through the in-repo stand-in)"};
  std::int64_t n = 200000;
  int repetitions = 3;
  bool apply = false;
  std::string only;
  app.add_option("--rows", n);
  std::int64_t warmup = 0;
  app.add_option("--repetitions", repetitions);
  app.add_option("--warmup", warmup, "with --only: rows written in this process before measuring");
  app.add_flag("--apply", apply, "commit every group on the emulator (slow: measures it)");
  app.add_option("--only", only, "run one side only, for profiling: sink or raw")
      ->check(CLI::IsMember({"sink", "raw"}));
  CLI11_PARSE(app, argc, argv);
  const char* emulator = std::getenv("SPANNER_EMULATOR_HOST");
  if (emulator == nullptr) {
    std::fprintf(stderr, "set SPANNER_EMULATOR_HOST (scripts/emulators.sh start spanner)\n");
    return 2;
  }
  auto [standin, endpoint] = StartStandIn(emulator, apply);
  auto once = [&](bool sink, std::int64_t count) {
    return sink ? Measure([&] { Sink(endpoint, count); }) : Measure([&] { Raw(endpoint, count); });
  };
  if (!only.empty()) {
    if (warmup > 0) once(only == "sink", warmup);
    Measurement m = once(only == "sink", n);
    std::printf("%s: %.0f rows/s, %.3f CPU-s per 100k\n", only.c_str(), n / m.wall_s,
                m.cpu_s * 100000.0 / n);
    gcpstream::bench::PrintResult("spanner_write", only == "raw" ? "raw" : "gcpstream", n, m);
    kill(standin, SIGTERM);
    waitpid(standin, nullptr, 0);
    return 0;
  }
  using gcpstream::bench::Median;
  using gcpstream::bench::Spread;
  std::printf(
      "Spanner BatchWrite through the stand-in (%s), %lld rows of 3 columns (~230 B), %d "
      "mutations per request, %d requests in flight; %d interleaved repetitions after a "
      "warm-up; medians (spread)\n",
      apply ? "committing on the emulator" : "groups answered without commit",
      static_cast<long long>(n), kBatch, kConcurrency, repetitions);
  std::printf("%-30s %10s %22s\n", "client", "rows/s", "CPU-s per 100k rows");
  once(false, n / 4);
  once(true, n / 4);
  std::vector<double> raw_rate, raw_cpu, sink_rate, sink_cpu;
  for (int r = 0; r < repetitions; ++r) {
    Measurement raw = once(false, n);
    raw_rate.push_back(n / raw.wall_s);
    raw_cpu.push_back(raw.cpu_s * 100000.0 / n);
    Measurement s = once(true, n);
    sink_rate.push_back(n / s.wall_s);
    sink_cpu.push_back(s.cpu_s * 100000.0 / n);
  }
  std::printf("%-30s %10.0f %22.3f   (spread %.0f%% / %.0f%%)\n", "raw BatchWrite loop",
              Median(raw_rate), Median(raw_cpu), 100 * Spread(raw_rate), 100 * Spread(raw_cpu));
  std::printf("%-30s %10.0f %22.3f   (spread %.0f%% / %.0f%%)\n", "gcpstream sink (job)",
              Median(sink_rate), Median(sink_cpu), 100 * Spread(sink_rate), 100 * Spread(sink_cpu));
  const double ratio = Median(sink_rate) / Median(raw_rate);
  std::printf(
      "sink / raw throughput %.3f (goal >= 0.85)%s; CPU per row %.3f\n", ratio,
      std::max(Spread(raw_rate), Spread(sink_rate)) > 0.10 ? " inconclusive: spread > 10%" : "",
      Median(sink_cpu) / Median(raw_cpu));
  kill(standin, SIGTERM);
  waitpid(standin, nullptr, 0);
  return 0;
}
