// Creating Cloud Tasks tasks against the in-repo fake service (a separate process, so only the
// client's CPU is measured): the gcpstream sink in a job (sequence -> task -> CloudTasksSink,
// flushed at end of input) against a raw CreateTask loop over the same generated stub with the
// same concurrency (100 creates in flight: what one gRPC channel carries), interleaved in the
// same run; each for unnamed tasks and for named ones (task id = SHA-256 of the key, computed by
// both sides). Reports tasks/s and client CPU-seconds per 100k tasks. Goal: sink >= 85 % of raw.
//
//   build/bench/cloud_tasks_write [--tasks N] [--repetitions R] [--only sink|raw --named]
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
#include "gcpstream/tasks/admin/resource_names.h"
#include "gcpstream/tasks/sink/cloud_tasks_sink.h"
#include "google/cloud/tasks/v2/cloudtasks.grpc.pb.h"

namespace {

using gcpstream::bench::Measure;
using gcpstream::bench::Measurement;
namespace v2 = google::cloud::tasks::v2;

constexpr int kConcurrency = 100;
const std::string kBody(512, 'x');
const gcpstream::connector::QueueDestination kQueue =
    gcpstream::connector::QueueDestination::of("bench", "us-central1", "bench");

std::string Key(std::int64_t run, std::int64_t i) {
  return std::to_string(run) + "-" + std::to_string(i);
}

// Starts the fake binary on a free port; returns its pid and endpoint.
std::pair<pid_t, std::string> StartFake() {
  int out[2];
  if (pipe(out) != 0) std::exit(1);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    execl(CLOUD_TASKS_FAKE_PATH, CLOUD_TASKS_FAKE_PATH, "--queue", kQueue.resource_name().c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  FILE* in = fdopen(out[0], "r");
  char line[256] = {};
  if (in == nullptr || std::fgets(line, sizeof line, in) == nullptr) {
    std::fprintf(stderr, "the Cloud Tasks fake (%s) did not start\n", CLOUD_TASKS_FAKE_PATH);
    std::exit(1);
  }
  std::string text(line);
  const auto at = text.rfind(' ');
  return {pid, text.substr(at + 1, text.find_last_not_of("\r\n") - at)};
}

void Raw(v2::CloudTasks::Stub& stub, std::int64_t run, std::int64_t n, bool named) {
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  std::int64_t failed = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    struct Call {
      grpc::ClientContext ctx;
      v2::CreateTaskRequest request;
      v2::Task response;
    };
    auto call = std::make_shared<Call>();
    call->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    call->request.set_parent(kQueue.resource_name());
    auto* http = call->request.mutable_task()->mutable_http_request();
    http->set_url("https://handler.example.com/work");
    http->set_body(kBody);
    if (named)
      call->request.mutable_task()->set_name(gcpstream::tasks::TaskName(kQueue, Key(run, i)));
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return in_flight < kConcurrency; });
      ++in_flight;
    }
    stub.async()->CreateTask(&call->ctx, &call->request, &call->response,
                             [call, &mu, &cv, &in_flight, &failed](grpc::Status s) {
                               std::lock_guard lock(mu);
                               if (!s.ok()) ++failed;
                               --in_flight;
                               cv.notify_all();
                             });
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return in_flight == 0; });
  if (failed > 0) {
    std::fprintf(stderr, "raw loop: %lld creates failed\n", static_cast<long long>(failed));
    std::exit(1);
  }
}

void Sink(const std::string& endpoint, std::int64_t run, std::int64_t n, bool named) {
  gcpstream::StreamExecutionEnvironment env;
  env.set_parallelism(1);
  gcpstream::tasks::CloudTasksWriterOptions options;
  options.max_in_flight_tasks = kConcurrency;
  auto schema = gcpstream::tasks::http_target<std::int64_t>("https://handler.example.com/work")
                    .with_body([](const std::int64_t&) { return kBody; })
                    .build();
  auto b = gcpstream::tasks::CloudTasksSink<std::int64_t>::builder();
  b.queue(kQueue).serializer(*schema).writer_options(options).emulator_endpoint(endpoint);
  if (named) b.task_id_extractor([run](const std::int64_t& i) { return Key(run, i); });
  auto sink = b.build();
  if (!sink.ok()) {
    std::fprintf(stderr, "%s\n", sink.status().ToString().c_str());
    std::exit(1);
  }
  env.from_source(std::make_shared<gcpstream::NumberSequenceSource>(0, n - 1, 1),
                  gcpstream::WatermarkStrategy<std::int64_t>::no_watermarks(), "sequence")
      .sink_to(*sink, "tasks");
  auto result = env.execute("cloud_tasks_write");
  if (!result.status.ok()) {
    std::fprintf(stderr, "sink job failed: %s\n", result.status.ToString().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Cloud Tasks create benchmark (against the in-repo fake)"};
  std::int64_t n = 50000;
  int repetitions = 3;
  std::string only;
  bool named = false;
  std::int64_t warmup = 0;
  app.add_option("--tasks", n);
  app.add_option("--repetitions", repetitions);
  app.add_option("--only", only, "run one side only, for profiling: sink or raw")
      ->check(CLI::IsMember({"sink", "raw"}));
  app.add_flag("--named", named, "with --only: named tasks");
  app.add_option("--warmup", warmup, "with --only: tasks created first, outside the measurement");
  CLI11_PARSE(app, argc, argv);
  auto [fake, endpoint] = StartFake();
  auto stub =
      v2::CloudTasks::NewStub(grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
  std::int64_t run = 0;  // every run names its own tasks: named creates never collide
  auto once = [&](bool sink, bool with_names, std::int64_t count) {
    ++run;
    return sink ? Measure([&] { Sink(endpoint, run, count, with_names); })
                : Measure([&] { Raw(*stub, run, count, with_names); });
  };
  if (!only.empty()) {
    if (warmup > 0) once(only == "sink", named, warmup);
    Measurement m = once(only == "sink", named, n);
    std::printf("%s%s: %.0f tasks/s, %.3f CPU-s per 100k\n", only.c_str(), named ? " (named)" : "",
                n / m.wall_s, m.cpu_s * 100000.0 / n);
    gcpstream::bench::PrintResult("cloud_tasks_write", only == "raw" ? "raw" : "gcpstream", n, m);
    kill(fake, SIGTERM);
    waitpid(fake, nullptr, 0);
    return 0;
  }
  using gcpstream::bench::Median;
  using gcpstream::bench::Spread;
  std::printf(
      "Cloud Tasks CreateTask against the fake, %lld tasks of 512 B, %d in flight; %d interleaved "
      "repetitions after a warm-up; medians (spread)\n",
      static_cast<long long>(n), kConcurrency, repetitions);
  std::printf("%-30s %10s %22s\n", "client", "tasks/s", "CPU-s per 100k tasks");
  for (bool with_names : {false, true}) {
    once(false, with_names, n / 4);
    once(true, with_names, n / 4);
    std::vector<double> raw_rate, raw_cpu, sink_rate, sink_cpu;
    for (int r = 0; r < repetitions; ++r) {
      Measurement raw = once(false, with_names, n);
      raw_rate.push_back(n / raw.wall_s);
      raw_cpu.push_back(raw.cpu_s * 100000.0 / n);
      Measurement s = once(true, with_names, n);
      sink_rate.push_back(n / s.wall_s);
      sink_cpu.push_back(s.cpu_s * 100000.0 / n);
    }
    const char* kind = with_names ? "named" : "unnamed";
    std::printf("%-30s %10.0f %22.3f   (spread %.0f%% / %.0f%%)\n",
                fmt::format("raw CreateTask loop, {}", kind).c_str(), Median(raw_rate),
                Median(raw_cpu), 100 * Spread(raw_rate), 100 * Spread(raw_cpu));
    std::printf("%-30s %10.0f %22.3f   (spread %.0f%% / %.0f%%)\n",
                fmt::format("gcpstream sink (job), {}", kind).c_str(), Median(sink_rate),
                Median(sink_cpu), 100 * Spread(sink_rate), 100 * Spread(sink_cpu));
    const double ratio = Median(sink_rate) / Median(raw_rate);
    std::printf(
        "%s: sink / raw throughput %.3f (goal >= 0.85)%s; CPU per task %.3f\n", kind, ratio,
        std::max(Spread(raw_rate), Spread(sink_rate)) > 0.10 ? " inconclusive: spread > 10%" : "",
        Median(sink_cpu) / Median(raw_cpu));
  }
  kill(fake, SIGTERM);
  waitpid(fake, nullptr, 0);
  return 0;
}
