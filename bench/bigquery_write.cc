// Writing rows to BigQuery through the Storage Write API, against the in-repo fake (a separate
// process, so only the client's CPU is measured): the gcpstream sink in a job (sequence -> JSON
// row -> BigQuerySink, 1 s checkpoints) with STORAGE_API_AT_LEAST_ONCE (the `_default` stream)
// and with STORAGE_API_EXACTLY_ONCE (a BUFFERED stream, FlushRows after each checkpoint),
// against a raw AppendRows loop over the generated stub on `_default`: the same rows encoded by
// the same serializer, the same request size (512 KiB) and the same window (100 requests in
// flight). Interleaved in one run; reports rows/s and client CPU-seconds per 100k rows.
// Goals: at-least-once >= 85 % of raw, exactly-once >= 70 % of raw.
//
//   build/bench/bigquery_write [--rows N] [--repetitions R] [--only raw|at-least-once|exactly-once]
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "bench/bench_util.h"
#include "bench/bigquery_bench_rows.h"
#include "bench/bigquery_fake_process.h"
#include "gcpstream/bigquery/admin/table_admin.h"
#include "gcpstream/bigquery/schema/writer_descriptor.h"
#include "gcpstream/bigquery/sink/bigquery_sink.h"
#include "gcpstream/connector/oauth2_credentials.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/stream_execution_environment.h"

namespace {

using gcpstream::bench::Measure;
using gcpstream::bench::Measurement;
namespace bq = gcpstream::bigquery;
namespace storage = google::cloud::bigquery::storage::v1;

constexpr int kWindow = 100;
constexpr std::int64_t kRequestBytes = 512 * 1024;

using Fake = gcpstream::bench::BigQueryFakeProcess;

Fake StartFake() { return Fake::Start(BIGQUERY_FAKE_PATH); }

bq::TableSchema Schema() { return gcpstream::bench::BigQueryBenchSchema(); }
bq::BigQuerySerializationSchema<std::int64_t> Serializer() {
  return gcpstream::bench::BigQueryBenchSerializer();
}

// The baseline: rows encoded by the same serializer, batched to the same request size, sent on
// one AppendRows connection to `_default` with up to kWindow requests unanswered.
void Raw(storage::BigQueryWrite::Stub& stub, const std::string& table, std::int64_t n) {
  auto serializer = Serializer();
  grpc::ClientContext ctx;
  auto rpc = stub.AppendRows(&ctx);
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  std::int64_t failed = 0;
  std::thread reader([&] {
    storage::AppendRowsResponse response;
    while (rpc->Read(&response)) {
      std::lock_guard lock(mu);
      if (response.has_error()) ++failed;
      --in_flight;
      cv.notify_all();
    }
  });
  bool first = true;
  storage::AppendRowsRequest request;
  std::int64_t bytes = 0;
  auto send = [&] {
    if (request.proto_rows().rows().serialized_rows_size() == 0) return;
    request.set_write_stream(table + "/streams/_default");
    if (first) {
      *request.mutable_proto_rows()->mutable_writer_schema()->mutable_proto_descriptor() =
          serializer.writer_descriptor();
      first = false;
    }
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return in_flight < kWindow; });
      ++in_flight;
    }
    rpc->Write(request);
    request.Clear();
    bytes = 0;
  };
  gcpstream::SinkWriterContext context;
  for (std::int64_t i = 0; i < n; ++i) {
    auto row = serializer.serialize(i, context);
    if (!row.ok() || !row->has_value()) std::exit(1);
    if (bytes + static_cast<std::int64_t>((*row)->bytes.size()) > kRequestBytes) send();
    bytes += static_cast<std::int64_t>((*row)->bytes.size());
    *request.mutable_proto_rows()->mutable_rows()->add_serialized_rows() = std::move((*row)->bytes);
  }
  send();
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return in_flight == 0; });
  }
  rpc->WritesDone();
  reader.join();
  if (!rpc->Finish().ok() || failed > 0) {
    std::fprintf(stderr, "raw loop: %lld appends failed\n", static_cast<long long>(failed));
    std::exit(1);
  }
}

void Sink(const Fake& fake, const std::string& table, std::int64_t n, bq::WriteMethod method) {
  gcpstream::StreamExecutionEnvironment env;
  env.set_parallelism(1);
  env.enable_checkpointing(std::chrono::seconds(1));
  auto sink =
      bq::BigQuerySink<std::int64_t>::builder()
          .destination(gcpstream::connector::BigQueryTableDestination::of("bench", "bench", table))
          .write_method(method)
          .serializer(Serializer())
          .emulator_endpoint(fake.grpc)
          .emulator_rest_endpoint(fake.rest)
          .build();
  if (!sink.ok()) {
    std::fprintf(stderr, "%s\n", sink.status().ToString().c_str());
    std::exit(1);
  }
  env.from_source(std::make_shared<gcpstream::NumberSequenceSource>(0, n - 1, 1),
                  gcpstream::WatermarkStrategy<std::int64_t>::no_watermarks(), "sequence")
      .sink_to(*sink, "bigquery");
  auto result = env.execute("bigquery_write");
  if (!result.status.ok()) {
    std::fprintf(stderr, "sink job failed: %s\n", result.status.ToString().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"BigQuery Storage Write benchmark (against the in-repo fake)"};
  std::int64_t n = 300000;
  int repetitions = 3;
  std::string only;
  app.add_option("--rows", n);
  app.add_option("--repetitions", repetitions);
  app.add_option("--only", only, "run one side only, for profiling")
      ->check(CLI::IsMember({"raw", "at-least-once", "exactly-once"}));
  CLI11_PARSE(app, argc, argv);
  const Fake fake = StartFake();
  auto stub = storage::BigQueryWrite::NewStub(
      grpc::CreateChannel(fake.grpc, grpc::InsecureChannelCredentials()));
  bq::TableAdmin admin(fake.rest, gcpstream::connector::MakeNoCredentials());
  int tables = 0;
  // Every run writes a table of its own (the fake keeps rows in memory; a fresh table keeps the
  // runs alike).
  auto once = [&](const std::string& side, std::int64_t count) {
    const std::string id = "t" + std::to_string(++tables);
    const gcpstream::connector::BigQueryTableDestination table =
        gcpstream::connector::BigQueryTableDestination::of("bench", "bench", id);
    if (side == "raw") {
      auto created =
          admin.insert_table(table, {{"schema", {{"fields", bq::TableSchemaToJson(Schema())}}}});
      if (!created.ok()) {
        std::fprintf(stderr, "creating %s: %s\n", id.c_str(), created.status().ToString().c_str());
        std::exit(1);
      }
      return Measure([&] { Raw(*stub, table.resource_name(), count); });
    }
    return Measure([&] {
      Sink(fake, id, count,
           side == "exactly-once" ? bq::WriteMethod::kStorageApiExactlyOnce
                                  : bq::WriteMethod::kStorageApiAtLeastOnce);
    });
  };
  if (!only.empty()) {
    Measurement m = once(only, n);
    std::printf("%s: %.0f rows/s, %.3f CPU-s per 100k\n", only.c_str(), n / m.wall_s,
                m.cpu_s * 100000.0 / n);
    gcpstream::bench::PrintResult("bigquery_write", only == "raw" ? "raw" : only.c_str(), n, m);
    fake.Stop();
    return 0;
  }
  using gcpstream::bench::Median;
  using gcpstream::bench::PrintRow;
  using gcpstream::bench::Spread;
  std::printf(
      "BigQuery AppendRows against the fake, %lld rows of ~90 B in 512 KiB requests, %d in "
      "flight; %d interleaved repetitions after a warm-up; medians (spread)\n",
      static_cast<long long>(n), kWindow, repetitions);
  std::printf("%-38s %12s %24s\n", "client", "rows/s", "CPU-s per 100k rows");
  for (const char* side : {"raw", "at-least-once", "exactly-once"}) once(side, n / 4);
  std::vector<double> rate[3], cpu[3];
  const char* sides[3] = {"raw", "at-least-once", "exactly-once"};
  for (int r = 0; r < repetitions; ++r) {
    for (int s = 0; s < 3; ++s) {
      Measurement m = once(sides[s], n);
      rate[s].push_back(n / m.wall_s);
      cpu[s].push_back(m.cpu_s * 100000.0 / n);
    }
  }
  PrintRow("raw AppendRows loop (_default)", rate[0], cpu[0]);
  PrintRow("sink, STORAGE_API_AT_LEAST_ONCE", rate[1], cpu[1]);
  PrintRow("sink, STORAGE_API_EXACTLY_ONCE (1 s ckpt)", rate[2], cpu[2]);
  const double spread = std::max({Spread(rate[0]), Spread(rate[1]), Spread(rate[2])});
  const char* note = spread > 0.10 ? " inconclusive: spread > 10%" : "";
  std::printf("at-least-once / raw throughput %.3f (goal >= 0.85)%s; CPU per row %.3f\n",
              Median(rate[1]) / Median(rate[0]), note, Median(cpu[1]) / Median(cpu[0]));
  std::printf("exactly-once / raw throughput %.3f (goal >= 0.70)%s; CPU per row %.3f\n",
              Median(rate[2]) / Median(rate[0]), note, Median(cpu[2]) / Median(cpu[0]));
  fake.Stop();
  return 0;
}
