// FILE_LOADS against the in-repo fake (a separate process, so only the client's CPU is
// measured): the gcpstream sink in a job (sequence -> JSON row -> BigQueryFileLoadsSink, rows
// encoded to Avro with zstandard blocks, staged through resumable uploads, loaded when each
// 1 s checkpoint completes) against a raw loop doing the same work without the framework: the
// same rows from the same serializer, the same Avro encoder and container (zstandard), the same
// 2 MiB upload chunks, the same 16 MiB files, then one load job per file set. Interleaved in one
// run; reports rows/s staged and loaded, and client CPU-seconds per 100k rows. Goal: the sink
// >= 85 % of the raw loop's throughput.
//
//   build/bench/bigquery_file_loads [--rows N] [--repetitions R] [--only raw|sink]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "bench/bench_util.h"
#include "bench/bigquery_bench_rows.h"
#include "bench/bigquery_fake_process.h"
#include "gcpstream/bigquery/admin/table_admin.h"
#include "gcpstream/bigquery/sink/bigquery_file_loads_sink.h"
#include "gcpstream/bigquery/staging/avro_container.h"
#include "gcpstream/bigquery/staging/avro_row_encoder.h"
#include "gcpstream/connector/oauth2_credentials.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/stream_execution_environment.h"

namespace {

using gcpstream::bench::Measure;
using gcpstream::bench::Measurement;
namespace bq = gcpstream::bigquery;

constexpr std::int64_t kChunk = 2LL << 20;
constexpr std::int64_t kFileBytes = 16LL << 20;
using Fake = gcpstream::bench::BigQueryFakeProcess;

bq::TableSchema Schema() { return gcpstream::bench::BigQueryBenchSchema(); }
bq::BigQuerySerializationSchema<std::int64_t> Serializer() {
  return gcpstream::bench::BigQueryBenchSerializer();
}

void Check(const absl::Status& st, const char* what) {
  if (st.ok()) return;
  std::fprintf(stderr, "%s: %s\n", what, st.ToString().c_str());
  std::exit(1);
}

// The baseline: encode, frame, upload in chunks, roll at 16 MiB, then one load of the files.
void Raw(const Fake& fake, const std::string& table, std::int64_t n) {
  auto serializer = Serializer();
  auto encoder = bq::staging::AvroRowEncoder::Create(Schema(), serializer.writer_descriptor());
  Check(encoder.status(), "encoder");
  gcpstream::gcs::StorageClient storage(fake.rest, gcpstream::connector::MakeNoCredentials());
  bq::TableAdmin admin(fake.rest, gcpstream::connector::MakeNoCredentials());
  std::vector<std::string> uris;
  std::unique_ptr<bq::staging::AvroContainerWriter> file;
  std::string pending, session, object;
  std::int64_t sent = 0;
  auto upload = [&](bool last) {
    const std::int64_t size =
        last ? static_cast<std::int64_t>(pending.size())
             : static_cast<std::int64_t>(pending.size()) / (256 * 1024) * (256 * 1024);
    if (size == 0 && !last) return;
    auto progress =
        storage.upload_chunk(session, sent, std::string_view(pending).substr(0, size), last);
    Check(progress.status(), "upload");
    pending.erase(0, static_cast<std::size_t>(size));
    sent += size;
  };
  auto finish = [&] {
    Check(file->flush(&pending), "flush");
    upload(true);
    uris.push_back("gs://bench-staging/" + object);
    file.reset();
  };
  gcpstream::SinkWriterContext context;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!file) {
      object = table + "/raw-" + std::to_string(uris.size()) + ".avro";
      auto s = storage.start_resumable_upload("bench-staging", object);
      Check(s.status(), "session");
      session = *s;
      sent = 0;
      file = std::make_unique<bq::staging::AvroContainerWriter>((*encoder)->schema_json(),
                                                                bq::staging::AvroCodec::kZstandard);
      file->start(&pending);
    }
    auto row = serializer.serialize(i, context);
    std::string datum;
    Check((*encoder)->encode((*row)->bytes, &datum), "encode");
    Check(file->add(datum, &pending), "add");
    if (static_cast<std::int64_t>(pending.size()) >= kChunk) upload(false);
    if (sent + static_cast<std::int64_t>(pending.size()) >= kFileBytes) finish();
  }
  if (file) finish();
  const auto ref = gcpstream::connector::BigQueryTableDestination::of("bench", "bench", table);
  Check(
      admin.insert_table(ref, {{"schema", {{"fields", bq::TableSchemaToJson(Schema())}}}}).status(),
      "table");
  const nlohmann::json config = {
      {"load",
       {{"sourceUris", uris},
        {"sourceFormat", "AVRO"},
        {"useAvroLogicalTypes", true},
        {"destinationTable", {{"projectId", "bench"}, {"datasetId", "bench"}, {"tableId", table}}},
        {"schema", {{"fields", bq::TableSchemaToJson(Schema())}}}}}};
  Check(admin.insert_job("bench", "raw_" + table, config).status(), "load");
  for (;;) {
    auto job = admin.get_job("bench", "raw_" + table, "");
    Check(job.status(), "poll");
    if ((*job)["status"]["state"] == "DONE") {
      if ((*job)["status"].contains("errorResult"))
        Check(absl::InternalError("load failed"), "load");
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void Sink(const Fake& fake, const std::string& table, std::int64_t n) {
  gcpstream::StreamExecutionEnvironment env;
  env.set_parallelism(1);
  env.enable_checkpointing(std::chrono::seconds(1));
  bq::FileLoadsOptions loads;
  loads.staging_path = "gs://bench-staging/" + table;
  loads.load_job_poll_initial_backoff = std::chrono::milliseconds(5);
  loads.load_job_poll_max_backoff = std::chrono::milliseconds(5);
  auto sink =
      bq::BigQuerySink<std::int64_t>::builder()
          .destination(gcpstream::connector::BigQueryTableDestination::of("bench", "bench", table))
          .write_method(bq::WriteMethod::kFileLoads)
          .file_loads_options(loads)
          .serializer(Serializer())
          .emulator_endpoint(fake.grpc)
          .emulator_rest_endpoint(fake.rest)
          .build_file_loads();
  Check(sink.status(), "sink");
  env.from_source(std::make_shared<gcpstream::NumberSequenceSource>(0, n - 1, 1),
                  gcpstream::WatermarkStrategy<std::int64_t>::no_watermarks(), "sequence")
      .sink_to(*sink, "bigquery");
  auto result = env.execute("bigquery_file_loads");
  Check(result.status, "sink job");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"BigQuery FILE_LOADS benchmark (against the in-repo fake)"};
  std::int64_t n = 300000;
  int repetitions = 3;
  std::string only;
  app.add_option("--rows", n);
  app.add_option("--repetitions", repetitions);
  app.add_option("--only", only, "run one side only, for profiling")
      ->check(CLI::IsMember({"raw", "sink"}));
  CLI11_PARSE(app, argc, argv);
  const Fake fake = Fake::Start(BIGQUERY_FAKE_PATH);
  int tables = 0;
  auto once = [&](const std::string& side, std::int64_t count) {
    const std::string id = "t" + std::to_string(++tables);
    return Measure([&] {
      if (side == "raw") {
        Raw(fake, id, count);
      } else {
        Sink(fake, id, count);
      }
    });
  };
  if (!only.empty()) {
    Measurement m = once(only, n);
    std::printf("%s: %.0f rows/s, %.3f CPU-s per 100k\n", only.c_str(), n / m.wall_s,
                m.cpu_s * 100000.0 / n);
    gcpstream::bench::PrintResult("bigquery_file_loads", only.c_str(), n, m);
    fake.Stop();
    return 0;
  }
  using gcpstream::bench::Median;
  using gcpstream::bench::PrintRow;
  using gcpstream::bench::Spread;
  std::printf(
      "BigQuery FILE_LOADS against the fake, %lld rows of ~90 B, Avro with zstandard, 2 MiB "
      "chunks, 16 MiB files; %d interleaved repetitions after a warm-up; medians (spread)\n",
      static_cast<long long>(n), repetitions);
  std::printf("%-38s %12s %24s\n", "client", "rows/s", "CPU-s per 100k rows");
  for (const char* side : {"raw", "sink"}) once(side, n / 4);  // warm-up
  auto c = gcpstream::bench::Interleave(
      repetitions, static_cast<double>(n), [&] { return once("raw", n); },
      [&] { return once("sink", n); });
  PrintRow("raw stage-and-load loop", c.base_rate, c.base_cpu);
  PrintRow("sink, FILE_LOADS (1 s ckpt)", c.rate, c.cpu);
  const double spread = std::max(Spread(c.base_rate), Spread(c.rate));
  std::printf("FILE_LOADS / raw throughput %.3f (goal >= 0.85)%s; CPU per row %.3f\n",
              Median(c.rate) / Median(c.base_rate),
              spread > 0.10 ? " inconclusive: spread > 10%" : "",
              Median(c.cpu) / Median(c.base_cpu));
  fake.Stop();
  return 0;
}
