// The Bigtable scan source against a raw ReadRows loop over the same table, on the emulator.
//
// Both read a table of --rows rows (3 cells of 100 bytes each):
//  - raw: one ReadRows over the whole table on one thread, rows reassembled from chunks with
//    the library's ReadRowsAssembler (what any client does) and each key copied out (what the
//    source's deserializer does too);
//  - source: a job of parallelism 1 reading BigtableSource<std::string> into a counting sink
//    (SampleRowKeys planning, one stream per split, the hand-off, the element queue, the
//    mailbox and the emitter).
// Prints rows/s and CPU-seconds per 100k rows (medians of interleaved repetitions with their
// spread) and the ratio source / raw (goal >= 0.85). The emulator serves both, so the ratio,
// not the absolute rate, is the result.
#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "bench/bench_util.h"
#include "gcpstream/bigtable/source/bigtable_source.h"
#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"

namespace {

using gcpstream::bench::Measure;
using gcpstream::bench::Measurement;
namespace v2 = google::bigtable::v2;
namespace bigtable = gcpstream::bigtable;

constexpr char kProject[] = "bench";
constexpr char kInstance[] = "read";

std::string TableName(const std::string& table) {
  return std::string("projects/") + kProject + "/instances/" + kInstance + "/tables/" + table;
}

void Setup(const std::string& endpoint, const std::string& table, std::int64_t rows) {
  auto channel = grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials());
  auto admin = google::bigtable::admin::v2::BigtableTableAdmin::NewStub(channel);
  google::bigtable::admin::v2::CreateTableRequest create;
  create.set_parent(std::string("projects/") + kProject + "/instances/" + kInstance);
  create.set_table_id(table);
  (*create.mutable_table()->mutable_column_families())["f"].mutable_gc_rule()->set_max_num_versions(
      1);
  google::bigtable::admin::v2::Table created;
  grpc::ClientContext ctx;
  if (!admin->CreateTable(&ctx, create, &created).ok()) std::exit(1);
  auto data = v2::Bigtable::NewStub(channel);
  for (std::int64_t start = 0; start < rows; start += 1000) {
    v2::MutateRowsRequest request;
    request.set_table_name(TableName(table));
    for (std::int64_t i = start; i < std::min(rows, start + 1000); ++i) {
      auto* entry = request.add_entries();
      entry->set_row_key(fmt::format("row-{:08d}", i));
      for (const char* q : {"a", "b", "c"}) {
        auto* cell = entry->add_mutations()->mutable_set_cell();
        cell->set_family_name("f");
        cell->set_column_qualifier(q);
        cell->set_timestamp_micros(1000);
        cell->set_value(std::string(100, 'x'));
      }
    }
    grpc::ClientContext mctx;
    auto stream = data->MutateRows(&mctx, request);
    v2::MutateRowsResponse response;
    while (stream->Read(&response)) {
    }
    if (!stream->Finish().ok()) std::exit(1);
  }
}

// One ReadRows over each range (the whole table when `ranges` is empty), in turn.
std::int64_t Raw(const std::string& endpoint, const std::string& table,
                 const std::vector<bigtable::RowKeyRange>& ranges = {}) {
  auto data =
      v2::Bigtable::NewStub(grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
  std::int64_t rows = 0;
  std::size_t bytes = 0;
  const std::vector<bigtable::RowKeyRange> all = {bigtable::RowKeyRange{}};
  for (const auto& range : ranges.empty() ? all : ranges) {
    v2::ReadRowsRequest request;
    request.set_table_name(TableName(table));
    *request.mutable_rows()->add_row_ranges() = bigtable::ToRowRangeProto(range);
    grpc::ClientContext ctx;
    auto stream = data->ReadRows(&ctx, request);
    bigtable::ReadRowsAssembler assembler;
    v2::ReadRowsResponse response;
    while (stream->Read(&response)) {
      absl::Status s = assembler.consume(response, [&](bigtable::BigtableRow row) {
        std::string key = std::move(row.key);
        bytes += key.size();
        ++rows;
        return absl::OkStatus();
      });
      if (!s.ok()) std::exit(1);
    }
    if (!stream->Finish().ok()) std::exit(1);
  }
  return bytes > 0 ? rows : 0;
}

// The pieces the source would plan: the table cut at its sampled keys.
std::vector<bigtable::RowKeyRange> SampledRanges(const std::string& endpoint,
                                                 const std::string& table) {
  auto data =
      v2::Bigtable::NewStub(grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
  auto keys = bigtable::SampleRowKeys(*data, TableName(table), "");
  if (!keys.ok()) std::exit(1);
  std::vector<bigtable::RowKeyRange> out;
  for (auto& split : bigtable::PlanScanSplits({bigtable::RowKeyRange{}}, *keys)) {
    out.push_back(split.range);
  }
  return out;
}

// The split reader alone on one split covering the table (no job): its stream thread, chunk
// reassembly and hand-off, without per-split planning or the runtime.
std::int64_t Reader(const std::string& endpoint, const std::string& table) {
  gcpstream::connector::ClientOptions client;
  if (!client.set_emulator_endpoint(endpoint).ok()) std::exit(2);
  bigtable::BigtableScanRequest request;
  request.table_name = TableName(table);
  bigtable::BigtableScanReader reader(bigtable::MakeBlockingBigtableStubFactory(client), request);
  if (!reader.handle_splits_addition({{bigtable::BigtableScanSplit{"range-0", {}}}}).ok()) {
    std::exit(1);
  }
  std::int64_t rows = 0;
  while (true) {
    auto batch = reader.fetch();
    if (!batch.ok()) std::exit(1);
    for (auto& group : batch->splits) rows += static_cast<std::int64_t>(group.elements.size());
    if (!batch->finished_splits.empty()) break;
  }
  (void)reader.close();
  return rows;
}

std::int64_t Source(const std::string& endpoint, const std::string& table) {
  auto source = bigtable::BigtableSource<std::string>::builder()
                    .table(gcpstream::connector::TableDestination::of(kProject, kInstance, table))
                    .emulator_endpoint(endpoint)
                    .deserializer([](const bigtable::BigtableRow& row,
                                     gcpstream::Collector<std::string>& out) -> absl::Status {
                      out.collect(row.key);
                      return absl::OkStatus();
                    })
                    .build();
  if (!source.ok()) std::exit(1);
  auto count = std::make_shared<std::atomic<std::int64_t>>(0);
  gcpstream::StreamExecutionEnvironment env;
  env.set_parallelism(1);
  env.from_source(*source, gcpstream::WatermarkStrategy<std::string>::no_watermarks(), "bigtable")
      .sink_to(std::make_shared<gcpstream::ForEachSink<std::string>>(
                   [count](const std::string&) { count->fetch_add(1, std::memory_order_relaxed); }),
               "count");
  auto result = env.execute("bigtable-read-bench");
  if (!result.status.ok()) {
    std::fprintf(stderr, "source job failed: %s\n", result.status.ToString().c_str());
    std::exit(1);
  }
  return count->load();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Bigtable scan source benchmark (against the emulator)"};
  std::int64_t n = 100000;
  int repetitions = 3;
  app.add_option("--rows", n);
  app.add_option("--repetitions", repetitions);
  CLI11_PARSE(app, argc, argv);
  const char* emulator = std::getenv("BIGTABLE_EMULATOR_HOST");
  if (emulator == nullptr) {
    std::fprintf(stderr, "set BIGTABLE_EMULATOR_HOST (scripts/emulators.sh start bigtable)\n");
    return 2;
  }
  const std::string endpoint = emulator;
  const std::string table = "scan-" + std::to_string(getpid());
  Setup(endpoint, table, n);
  auto once = [&](bool source) {
    std::int64_t rows = 0;
    Measurement m =
        Measure([&] { rows = source ? Source(endpoint, table) : Raw(endpoint, table); });
    if (rows != n) {
      std::fprintf(stderr, "%s read %lld rows, want %lld\n", source ? "source" : "raw",
                   static_cast<long long>(rows), static_cast<long long>(n));
      std::exit(1);
    }
    return m;
  };
  using gcpstream::bench::Median;
  using gcpstream::bench::Spread;
  std::printf(
      "Bigtable scan on the emulator, %lld rows of 3 x 100-byte cells, %d interleaved "
      "repetitions after a warm-up; medians (spread)\n",
      static_cast<long long>(n), repetitions);
  std::printf("%-34s %12s %24s\n", "reader", "rows/s", "CPU-s per 100k rows");
  once(false);
  once(true);
  const auto c = gcpstream::bench::Interleave(
      repetitions, static_cast<double>(n), [&] { return once(false); }, [&] { return once(true); });
  gcpstream::bench::PrintRow("raw ReadRows loop", c.base_rate, c.base_cpu, 34);
  gcpstream::bench::PrintRow("gcpstream BigtableSource (job)", c.rate, c.cpu, 34);
  std::vector<double> reader_rate, reader_cpu;
  for (int r = 0; r < repetitions; ++r) {
    std::int64_t rows = 0;
    Measurement m = Measure([&] { rows = Reader(endpoint, table); });
    if (rows != n) std::exit(1);
    reader_rate.push_back(n / m.wall_s);
    reader_cpu.push_back(m.cpu_s * 100000.0 / n);
  }
  gcpstream::bench::PrintRow("split reader alone, one split", reader_rate, reader_cpu, 34);
  // The emulator samples about every 100th key, so the source reads the table in about a
  // thousand short splits: the same calls made raw, one per sampled range, show what that
  // costs before the source adds anything.
  const auto ranges = SampledRanges(endpoint, table);
  std::vector<double> split_rate, split_cpu;
  for (int r = 0; r < repetitions; ++r) {
    std::int64_t rows = 0;
    Measurement m = Measure([&] { rows = Raw(endpoint, table, ranges); });
    if (rows != n) std::exit(1);
    split_rate.push_back(n / m.wall_s);
    split_cpu.push_back(m.cpu_s * 100000.0 / n);
  }
  char label[64];
  std::snprintf(label, sizeof label, "raw ReadRows per range (%zu)", ranges.size());
  gcpstream::bench::PrintRow(label, split_rate, split_cpu, 34);
  std::printf("source / raw per range throughput %.3f; CPU per row %.3f\n",
              Median(c.rate) / Median(split_rate), Median(c.cpu) / Median(split_cpu));
  std::printf(
      "source / raw throughput %.3f (goal >= 0.85)%s; CPU per row %.3f. CPU counts this process "
      "only (the emulator runs apart).\n",
      Median(c.rate) / Median(c.base_rate),
      std::max(Spread(c.base_rate), Spread(c.rate)) > 0.10 ? " inconclusive: spread > 10%" : "",
      Median(c.cpu) / Median(c.base_cpu));
  return 0;
}
