// Publishing 1 KiB messages to the Pub/Sub emulator: the gcpstream sink in a job (sequence ->
// message -> PubSubSink, flushed at end of input) against a raw gRPC Publish loop with the same
// batch size (100 messages) and the same concurrency (10 requests in flight = the sink's default
// max_in_flight_messages of 1000), interleaved in the same run. Reports throughput and client
// CPU-seconds per 100k messages (this process only; the emulator is another process).
// Goal: sink throughput >= 85 % of the raw loop.
//
//   build/bench/pubsub_publish [--endpoint host:port] [--messages N] [--repetitions R]
//   (endpoint defaults to $PUBSUB_EMULATOR_HOST)
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "bench/bench_util.h"
#include "gcpstream/pubsub/sink/pubsub_sink.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "google/pubsub/v1/pubsub.grpc.pb.h"

namespace {

using gcpstream::bench::Measure;
using gcpstream::bench::Measurement;
namespace ps = google::pubsub::v1;

constexpr int kBatch = 100;
constexpr int kConcurrency = 10;
const std::string kPayload(1024, 'x');

void CreateTopic(ps::Publisher::Stub& stub, const std::string& topic) {
  ps::Topic request;
  request.set_name(topic);
  ps::Topic response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto s = stub.CreateTopic(&ctx, request, &response);
  if (!s.ok() && s.error_code() != grpc::StatusCode::ALREADY_EXISTS) {
    std::fprintf(stderr, "CreateTopic failed: %s\n", s.error_message().c_str());
    std::exit(1);
  }
}

// Raw loop: batches of kBatch messages, kConcurrency Publish calls in flight.
void RawPublish(ps::Publisher::Stub& stub, const std::string& topic, std::int64_t n) {
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  std::int64_t failed = 0;
  for (std::int64_t sent = 0; sent < n; sent += kBatch) {
    struct Call {
      grpc::ClientContext ctx;
      ps::PublishRequest request;
      ps::PublishResponse response;
    };
    auto call = std::make_shared<Call>();
    call->request.set_topic(topic);
    for (int i = 0; i < kBatch && sent + i < n; ++i) {
      call->request.add_messages()->set_data(kPayload);
    }
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return in_flight < kConcurrency; });
      ++in_flight;
    }
    stub.async()->Publish(&call->ctx, &call->request, &call->response,
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
    std::fprintf(stderr, "raw loop: %lld publishes failed\n", static_cast<long long>(failed));
    std::exit(1);
  }
}

void SinkPublish(const std::string& endpoint, const std::string& topic_id, std::int64_t n) {
  gcpstream::StreamExecutionEnvironment env;
  env.set_parallelism(1);
  auto sink = gcpstream::pubsub::PubSubSink<std::int64_t>::builder()
                  .topic(gcpstream::connector::TopicDestination::of("bench", topic_id))
                  .serializer(gcpstream::pubsub::PubSubSerializationSchema<std::int64_t>::payload(
                      [](const std::int64_t&) { return kPayload; }))
                  .emulator_endpoint(endpoint)
                  .build();
  if (!sink.ok()) {
    std::fprintf(stderr, "%s\n", sink.status().ToString().c_str());
    std::exit(1);
  }
  env.from_source(std::make_shared<gcpstream::NumberSequenceSource>(0, n - 1, 1),
                  gcpstream::WatermarkStrategy<std::int64_t>::no_watermarks(), "sequence")
      .sink_to(*sink, "pubsub");
  auto result = env.execute("pubsub_publish");
  if (!result.status.ok()) {
    std::fprintf(stderr, "sink job failed: %s\n", result.status.ToString().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Pub/Sub publish benchmark"};
  std::string endpoint =
      std::getenv("PUBSUB_EMULATOR_HOST") ? std::getenv("PUBSUB_EMULATOR_HOST") : "";
  std::int64_t n = 200000;
  int repetitions = 3;
  std::string only;
  app.add_option("--endpoint", endpoint);
  app.add_option("--only", only, "run one side only, for profiling: sink or raw")
      ->check(CLI::IsMember({"sink", "raw"}));
  app.add_option("--messages", n);
  app.add_option("--repetitions", repetitions);
  std::int64_t warmup = 0;
  app.add_option("--warmup", warmup, "with --only: messages sent first, outside the measurement");
  CLI11_PARSE(app, argc, argv);
  if (endpoint.empty()) {
    std::fprintf(stderr, "set --endpoint or PUBSUB_EMULATOR_HOST (scripts/emulators.sh start)\n");
    return 2;
  }
  auto channel = grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials());
  auto stub = ps::Publisher::NewStub(channel);
  const std::string topic_id = "bench-publish";
  const std::string topic = "projects/bench/topics/" + topic_id;
  CreateTopic(*stub, topic);
  if (!only.empty()) {
    auto run = [&](std::int64_t count) {
      return only == "raw" ? Measure([&] { RawPublish(*stub, topic, count); })
                           : Measure([&] { SinkPublish(endpoint, topic_id, count); });
    };
    if (warmup > 0) run(warmup);
    Measurement m = run(n);
    std::printf("%s: %.0f messages/s, %.3f CPU-s per 100k\n", only.c_str(), n / m.wall_s,
                m.cpu_s * 100000.0 / n);
    gcpstream::bench::PrintResult("pubsub_publish", only == "raw" ? "raw" : "gcpstream", n, m);
    return 0;
  }
  // Warm-up of both paths (the emulator's JIT too).
  RawPublish(*stub, topic, n / 4);
  SinkPublish(endpoint, topic_id, n / 4);
  std::vector<double> raw_rate, raw_cpu, sink_rate, sink_cpu;
  for (int r = 0; r < repetitions; ++r) {
    Measurement raw = Measure([&] { RawPublish(*stub, topic, n); });
    raw_rate.push_back(n / raw.wall_s);
    raw_cpu.push_back(raw.cpu_s * 100000.0 / n);
    Measurement s = Measure([&] { SinkPublish(endpoint, topic_id, n); });
    sink_rate.push_back(n / s.wall_s);
    sink_cpu.push_back(s.cpu_s * 100000.0 / n);
  }
  using gcpstream::bench::Median;
  using gcpstream::bench::Spread;
  std::printf(
      "Pub/Sub publish, %lld x 1 KiB messages, batches of %d, %d in flight; "
      "%d interleaved repetitions after a warm-up; medians (spread)\n",
      static_cast<long long>(n), kBatch, kConcurrency, repetitions);
  std::printf("%-22s %12s %22s\n", "client", "messages/s", "CPU-s per 100k msgs");
  std::printf("%-22s %12.0f %22.3f   (spread %.0f%% / %.0f%%)\n", "raw gRPC loop", Median(raw_rate),
              Median(raw_cpu), 100 * Spread(raw_rate), 100 * Spread(raw_cpu));
  std::printf("%-22s %12.0f %22.3f   (spread %.0f%% / %.0f%%)\n", "gcpstream sink (job)",
              Median(sink_rate), Median(sink_cpu), 100 * Spread(sink_rate), 100 * Spread(sink_cpu));
  const double ratio = Median(sink_rate) / Median(raw_rate);
  std::printf(
      "sink / raw throughput: %.3f  (goal >= 0.85)%s\n", ratio,
      std::max(Spread(raw_rate), Spread(sink_rate)) > 0.10 ? "  inconclusive: spread > 10%" : "");
  std::printf("sink / raw CPU per message: %.3f\n", Median(sink_cpu) / Median(raw_cpu));
  return 0;
}
