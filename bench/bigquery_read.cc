// Reading a BigQuery table through the Storage Read API, against the in-repo fake (a separate
// process, so only the client's CPU is measured): the gcpstream source in a job (BigQuerySource
// -> a deserializer taking two columns -> a sink that drops them, 1 s checkpoints) against a raw
// loop over the same stub: one CreateReadSession, ReadRows to the end, every block decoded into
// rows by the same Avro decoder and the same two columns taken. One stream each (the fake is
// told to keep the table in one), parallelism 1. Interleaved in one run; reports rows/s and
// client CPU-seconds per 100k rows. Goal: the source >= 85 % of raw.
//
//   build/bench/bigquery_read [--rows N] [--repetitions R] [--only raw|source]
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>

#include "bench/bench_util.h"
#include "bench/bigquery_fake_process.h"
#include "gcpstream/bigquery/admin/table_admin.h"
#include "gcpstream/bigquery/source/avro_row_decoder.h"
#include "gcpstream/bigquery/source/bigquery_source.h"
#include "gcpstream/connector/oauth2_credentials.h"
#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/stream_execution_environment.h"

namespace {

using gcpstream::bench::Measure;
using gcpstream::bench::Measurement;
namespace bq = gcpstream::bigquery;
namespace storage = google::cloud::bigquery::storage::v1;

constexpr char kTable[] = "projects/bench/datasets/bench/tables/read";

using Fake = gcpstream::bench::BigQueryFakeProcess;

Fake StartFake() { return Fake::Start(BIGQUERY_FAKE_PATH); }

void Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "%s: %s\n", what.c_str(), status.ToString().c_str());
  std::exit(1);
}

// A table of `n` rows (id, origin, delay, payload), filled through tabledata.insertAll.
void Fill(const Fake& fake, std::int64_t n) {
  bq::TableAdmin admin(fake.rest, gcpstream::connector::MakeNoCredentials());
  auto created = admin.insert_table(
      gcpstream::connector::BigQueryTableDestination::of("bench", "bench", "read"),
      {{"schema", {{"fields", nlohmann::json::parse(R"([
          {"name": "id", "type": "INT64", "mode": "REQUIRED"},
          {"name": "origin", "type": "STRING"},
          {"name": "delay", "type": "FLOAT64"},
          {"name": "payload", "type": "STRING"}])")}}}});
  if (!created.ok()) Fail("creating the table", created.status());
  httplib::Client client(fake.rest);
  client.set_read_timeout(60);
  for (std::int64_t start = 0; start < n; start += 20000) {
    nlohmann::json rows = nlohmann::json::array();
    for (std::int64_t i = start; i < std::min(n, start + 20000); ++i) {
      rows.push_back({{"json",
                       {{"id", std::to_string(i)},
                        {"origin", i % 3 ? "JFK" : "SFO"},
                        {"delay", static_cast<double>(i % 90)},
                        {"payload", std::string(48, 'p')}}}});
    }
    auto res = client.Post("/bigquery/v2/projects/bench/datasets/bench/tables/read/insertAll",
                           nlohmann::json{{"rows", rows}}.dump(), "application/json");
    if (!res || res->status != 200) Fail("insertAll", absl::UnavailableError("insertAll failed"));
  }
  auto res =
      client.Post("/fake/v1/options", R"({"readRowsPerStream": 1000000000})", "application/json");
  if (!res || res->status != 200) Fail("options", absl::UnavailableError("options failed"));
}

gcpstream::connector::ClientOptions Client(const Fake& fake) {
  gcpstream::connector::ClientOptions client;
  if (auto s = client.set_emulator_endpoint(fake.grpc); !s.ok()) Fail("endpoint", s);
  return client;
}

// The baseline: the session, ReadRows to the end, each block decoded, two columns taken.
void Raw(const Fake& fake, std::int64_t n) {
  auto stub = bq::MakeBigQueryReadStubFactory(Client(fake))();
  if (!stub.ok()) Fail("stub", stub.status());
  bq::BigQueryReadOptions options;
  options.table = kTable;
  auto request = bq::MakeReadSessionRequest(options);
  auto session = (*stub)->create_read_session(request, std::chrono::seconds(30));
  if (!session.ok() || session->streams_size() != 1) Fail("session", session.status());
  auto decoder = bq::AvroRowDecoder::Create(session->avro_schema().schema());
  if (!decoder.ok()) Fail("decoder", decoder.status());
  storage::ReadRowsRequest read;
  read.set_read_stream(session->streams(0).name());
  auto call = (*stub)->read_rows(read);
  storage::ReadRowsResponse response;
  std::vector<bq::BigQueryReadRow> rows;
  std::int64_t count = 0, sum = 0;
  while (call->read(&response)) {
    rows.clear();
    auto st = (*decoder)->decode(response.avro_rows().serialized_binary_rows(),
                                 response.row_count(), rows);
    if (!st.ok()) Fail("decode", st);
    for (const auto& row : rows) {
      sum += *row.find("id")->as_int64();
      sum += static_cast<std::int64_t>(*row.find("delay")->as_double());
      ++count;
    }
  }
  if (auto st = call->finish(); !st.ok() || count != n) Fail("raw read", st);
  if (sum < 0) std::puts("");  // keeps the work observable
}

void Source(const Fake& fake, std::int64_t n) {
  gcpstream::StreamExecutionEnvironment env;
  env.set_parallelism(1);
  env.enable_checkpointing(std::chrono::seconds(1));
  auto source =
      bq::BigQuerySource<std::int64_t>::builder()
          .table(gcpstream::connector::BigQueryTableDestination::of("bench", "bench", "read"))
          .emulator_endpoint(fake.grpc)
          .deserializer([](const bq::BigQueryReadRow& row,
                           gcpstream::Collector<std::int64_t>& out) -> absl::Status {
            GCP_ASSIGN_OR_RETURN(std::int64_t id, row.find("id")->as_int64());
            GCP_ASSIGN_OR_RETURN(double delay, row.find("delay")->as_double());
            out.collect(id + static_cast<std::int64_t>(delay));
            return absl::OkStatus();
          })
          .build();
  if (!source.ok()) Fail("source", source.status());
  auto count = std::make_shared<std::atomic<std::int64_t>>(0);
  env.from_source(*source, gcpstream::WatermarkStrategy<std::int64_t>::no_watermarks(), "bigquery")
      .sink_to(std::make_shared<gcpstream::ForEachSink<std::int64_t>>([count](const std::int64_t&) {
                 count->fetch_add(1, std::memory_order_relaxed);
               }),
               "drop");
  auto result = env.execute("bigquery_read");
  if (!result.status.ok() || count->load() != n) Fail("source job", result.status);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"BigQuery Storage Read benchmark (against the in-repo fake)"};
  std::int64_t n = 300000;
  int repetitions = 3;
  std::string only;
  app.add_option("--rows", n);
  app.add_option("--repetitions", repetitions);
  app.add_option("--only", only, "run one side only, for profiling")
      ->check(CLI::IsMember({"raw", "source"}));
  CLI11_PARSE(app, argc, argv);
  const Fake fake = StartFake();
  Fill(fake, n);
  auto once = [&](const std::string& side) {
    return Measure([&] { side == "raw" ? Raw(fake, n) : Source(fake, n); });
  };
  if (!only.empty()) {
    Measurement m = once(only);
    std::printf("%s: %.0f rows/s, %.3f CPU-s per 100k\n", only.c_str(), n / m.wall_s,
                m.cpu_s * 100000.0 / n);
    gcpstream::bench::PrintResult("bigquery_read", only.c_str(), n, m);
  } else {
    using gcpstream::bench::Median;
    using gcpstream::bench::PrintRow;
    using gcpstream::bench::Spread;
    std::printf(
        "BigQuery ReadRows against the fake, %lld rows of ~80 B in Avro blocks of 1,000, one "
        "stream; %d interleaved repetitions after a warm-up; medians (spread)\n",
        static_cast<long long>(n), repetitions);
    std::printf("%-38s %12s %24s\n", "client", "rows/s", "CPU-s per 100k rows");
    once("raw");
    once("source");
    auto c = gcpstream::bench::Interleave(
        repetitions, static_cast<double>(n), [&] { return once("raw"); },
        [&] { return once("source"); });
    PrintRow("raw ReadRows loop + Avro decode", c.base_rate, c.base_cpu);
    PrintRow("BigQuerySource job (1 s ckpt)", c.rate, c.cpu);
    const double spread = std::max(Spread(c.base_rate), Spread(c.rate));
    std::printf("source / raw throughput %.3f (goal >= 0.85)%s; CPU per row %.3f\n",
                Median(c.rate) / Median(c.base_rate),
                spread > 0.10 ? " inconclusive: spread > 10%" : "",
                Median(c.cpu) / Median(c.base_cpu));
  }
  fake.Stop();
  return 0;
}
