// The Spanner snapshot source against a raw read of the same partitions, on the emulator.
//
// Both sides read one table of --rows rows at one snapshot: the planning is the source's own
// (PlanBatchRead), then
//  - raw: one ExecuteStreamingSql per partition, in turn, through SpannerDataClient, turning
//    each row's Id into a std::string (what the source's deserializer does too);
//  - source: a job of parallelism 1 reading SpannerSource<std::string> into a counting sink
//    (the fetch thread, the hand-off buffer, the element queue, the mailbox and the emitter).
// Prints rows/s and CPU-seconds per 100k rows for each (medians of interleaved repetitions,
// with their spread) and the ratio source / raw (goal ≥ 0.85). The emulator serves both, so
// the ratio, not the absolute rate, is the result. Then the same comparison for change records
// (mods/s over a backlog of inserted rows): the change-stream source against raw partition
// queries.
#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "bench/bench_util.h"
#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "gcpstream/spanner/admin/database_admin.h"
#include "gcpstream/spanner/changestream/change_stream_metadata.h"
#include "gcpstream/spanner/changestream/spanner_change_stream_source.h"
#include "gcpstream/spanner/source/spanner_source.h"

namespace {

using gcpstream::bench::Measure;
using gcpstream::bench::Measurement;
namespace sp = google::spanner::v1;
namespace spanner = gcpstream::spanner;

constexpr char kQuery[] = "SELECT Id, Origin, Delay FROM Flights";

// Through the connector's channel factory, which keeps gRPC's callback queue alive for the
// channel's callbacks (connector/callback_queue.h).
std::shared_ptr<spanner::SpannerStub> Stub(const std::string& endpoint) {
  gcpstream::connector::ClientOptions options;
  if (!options.set_emulator_endpoint(endpoint).ok()) std::exit(2);
  auto stub = spanner::MakeSpannerStub(options);
  if (!stub.ok()) std::exit(2);
  return *stub;
}

gcpstream::connector::DatabaseDestination Setup(const std::string& endpoint, std::int64_t rows) {
  const auto db = gcpstream::connector::DatabaseDestination::of(
      "bench", "read-" + std::to_string(getpid()), "flights");
  spanner::DatabaseAdmin admin(grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
  if (!admin.CreateInstance(db.project, db.instance).ok()) std::exit(1);
  auto created = admin.CreateDatabase(
      db, spanner::Dialect::kGoogleSql,
      {"CREATE TABLE Flights (Id STRING(64) NOT NULL, Origin STRING(3), Delay INT64) "
       "PRIMARY KEY (Id)"});
  if (!created.ok()) {
    std::fprintf(stderr, "%s\n", created.ToString().c_str());
    std::exit(1);
  }
  spanner::SpannerReadClient client(db.resource_name(), Stub(endpoint));
  for (std::int64_t start = 0; start < rows; start += 1000) {
    std::vector<spanner::Mutation> batch;
    for (std::int64_t i = start; i < std::min(rows, start + 1000); ++i) {
      batch.push_back(*spanner::Mutation::Insert("Flights")
                           .Set("Id", *spanner::Value::String("flight-" + std::to_string(i)))
                           .Set("Origin", *spanner::Value::String("SFO"))
                           .Set("Delay", spanner::Value::Int64(i % 300))
                           .Build());
    }
    auto committed = client.data().Commit(std::move(batch));
    if (!committed.ok()) {
      std::fprintf(stderr, "%s\n", committed.status().ToString().c_str());
      std::exit(1);
    }
  }
  return db;
}

std::int64_t Raw(const std::string& endpoint, const gcpstream::connector::DatabaseDestination& db) {
  spanner::SpannerReadClient client(db.resource_name(), Stub(endpoint));
  auto plan =
      spanner::PlanBatchRead(client.data(), spanner::SpannerReadOperation::query(kQuery), {});
  if (!plan.ok()) {
    std::fprintf(stderr, "%s\n", plan.status().ToString().c_str());
    std::exit(1);
  }
  std::int64_t rows = 0;
  std::size_t bytes = 0;
  for (const auto& split : plan->unassigned) {
    sp::ExecuteSqlRequest request;
    request.set_sql(kQuery);
    request.set_session(split.transaction.session);
    request.mutable_transaction()->set_id(split.transaction.transaction_id);
    request.set_partition_token(split.partition_token);
    absl::Status s = client.data().ExecuteStreamingSql(
        std::move(request),
        [&](const sp::ResultSetMetadata&, std::vector<google::protobuf::Value> row) {
          std::string id = row[0].string_value();
          bytes += id.size();
          ++rows;
          return absl::OkStatus();
        });
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      std::exit(1);
    }
  }
  return bytes > 0 ? rows : 0;
}

std::int64_t Source(const std::string& endpoint,
                    const gcpstream::connector::DatabaseDestination& db) {
  auto source = spanner::SpannerSource<std::string>::builder()
                    .database(db)
                    .read_operation(spanner::SpannerReadOperation::query(kQuery))
                    .deserializer([](const spanner::Row& row,
                                     gcpstream::Collector<std::string>& out) -> absl::Status {
                      GCP_ASSIGN_OR_RETURN(spanner::Value id, row.get(std::size_t{0}));
                      GCP_ASSIGN_OR_RETURN(std::string s, id.as_string());
                      out.collect(std::move(s));
                      return absl::OkStatus();
                    })
                    .emulator_endpoint(endpoint)
                    .build();
  if (!source.ok()) std::exit(1);
  auto count = std::make_shared<std::atomic<std::int64_t>>(0);
  gcpstream::StreamExecutionEnvironment env;
  env.set_parallelism(1);
  env.from_source(*source, gcpstream::WatermarkStrategy<std::string>::no_watermarks(), "spanner")
      .sink_to(std::make_shared<gcpstream::ForEachSink<std::string>>(
                   [count](const std::string&) { count->fetch_add(1, std::memory_order_relaxed); }),
               "count");
  auto result = env.execute("spanner-read-bench");
  if (!result.status.ok()) {
    std::fprintf(stderr, "source job failed: %s\n", result.status.ToString().c_str());
    std::exit(1);
  }
  return count->load();
}

// --- Change records: a backlog of `rows` inserted rows (one mod each) read from the change
// stream, by a raw loop (one thread per partition query, children started as their parents
// report them) and by the source (a job of parallelism 1, up to 8 queries). Both stop once
// every mod has been seen; the time to get there is the steady-state rate over the backlog.

constexpr char kStream[] = "FlightsChanges";

struct ChangeBacklog {
  gcpstream::connector::DatabaseDestination db;
  absl::Time start;
};

ChangeBacklog SetupChanges(const std::string& endpoint, std::int64_t rows) {
  ChangeBacklog out;
  out.db = gcpstream::connector::DatabaseDestination::of(
      "bench", "changes-" + std::to_string(getpid()), "flights");
  spanner::DatabaseAdmin admin(grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
  if (!admin.CreateInstance(out.db.project, out.db.instance).ok()) std::exit(1);
  auto created = admin.CreateDatabase(
      out.db, spanner::Dialect::kGoogleSql,
      {"CREATE TABLE Flights (Id STRING(64) NOT NULL, Origin STRING(3), Delay INT64) "
       "PRIMARY KEY (Id)",
       std::string("CREATE CHANGE STREAM ") + kStream + " FOR Flights"});
  if (!created.ok()) std::exit(1);
  out.start = absl::Now();
  spanner::SpannerReadClient client(out.db.resource_name(), Stub(endpoint));
  for (std::int64_t start = 0; start < rows; start += 1000) {
    std::vector<spanner::Mutation> batch;
    for (std::int64_t i = start; i < std::min(rows, start + 1000); ++i) {
      batch.push_back(*spanner::Mutation::Insert("Flights")
                           .Set("Id", *spanner::Value::String("flight-" + std::to_string(i)))
                           .Set("Origin", *spanner::Value::String("SFO"))
                           .Set("Delay", spanner::Value::Int64(i % 300))
                           .Build());
    }
    if (!client.data().Commit(std::move(batch)).ok()) std::exit(1);
  }
  return out;
}

std::int64_t RawChanges(const std::string& endpoint, const ChangeBacklog& backlog,
                        std::int64_t want) {
  spanner::SpannerReadClient client(backlog.db.resource_name(), Stub(endpoint));
  std::mutex mu;
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<spanner::ReadCancellation>> cancels;
  std::set<std::string> started;
  std::atomic<std::int64_t> mods{0};
  bool done = false;  // guarded by mu
  std::function<void(spanner::ChangeStreamPartitionSplit)> open =
      [&](spanner::ChangeStreamPartitionSplit split) {
        auto cancel = std::make_unique<spanner::ReadCancellation>();
        auto* c = cancel.get();
        if (done) c->cancel();  // every mod was seen: a child opened now ends at once
        cancels.push_back(std::move(cancel));
        threads.emplace_back([&, split, c] {
          (void)client.data().ExecuteStreamingSql(
              spanner::ChangeStreamQuery(spanner::Dialect::kGoogleSql, kStream, split,
                                         std::chrono::seconds(2),
                                         sp::RequestOptions::PRIORITY_HIGH),
              [&](const sp::ResultSetMetadata& metadata,
                  std::vector<google::protobuf::Value> values) -> absl::Status {
                auto records = spanner::ParseChangeStreamRow(metadata.row_type(), values, "");
                if (!records.ok()) return records.status();
                for (auto& record : *records) {
                  if (auto* d = std::get_if<spanner::DataChangeRecord>(&record)) {
                    if (mods.fetch_add(static_cast<std::int64_t>(d->mods.size())) +
                            static_cast<std::int64_t>(d->mods.size()) >=
                        want) {
                      std::lock_guard lock(mu);
                      done = true;
                      for (auto& k : cancels) k->cancel();
                    }
                  } else if (auto* ch = std::get_if<spanner::ChildPartitionsRecord>(&record)) {
                    std::lock_guard lock(mu);
                    for (const auto& child : ch->children) {
                      if (!started.insert(child.token).second) continue;
                      spanner::ChangeStreamPartitionSplit next;
                      next.token = child.token;
                      next.start = next.position = ch->start_timestamp;
                      open(next);
                    }
                  }
                }
                return absl::OkStatus();
              },
              c);
        });
      };
  {
    spanner::ChangeStreamPartitionSplit initial;
    initial.start = initial.position = backlog.start;
    std::lock_guard lock(mu);
    open(initial);
  }
  // Threads are only added under `mu`; join until none is left.
  for (std::size_t i = 0;; ++i) {
    std::thread t;
    {
      std::lock_guard lock(mu);
      if (i >= threads.size()) break;
      t = std::move(threads[i]);
    }
    t.join();
  }
  return mods.load();
}

std::int64_t SourceChanges(const std::string& endpoint, const ChangeBacklog& backlog,
                           std::int64_t want) {
  spanner::SpannerChangeStreamOptions options;
  options.start_position = spanner::ChangeStreamStartPosition::absolute(backlog.start);
  auto source = spanner::SpannerChangeStreamSource<std::int64_t>::builder()
                    .database(backlog.db)
                    .change_stream_name(kStream)
                    .options(options)
                    .deserializer([](const spanner::DataChangeRecord& r,
                                     gcpstream::Collector<std::int64_t>& out) -> absl::Status {
                      out.collect(static_cast<std::int64_t>(r.mods.size()));
                      return absl::OkStatus();
                    })
                    .emulator_endpoint(endpoint)
                    .build();
  if (!source.ok()) std::exit(1);
  auto mods = std::make_shared<std::atomic<std::int64_t>>(0);
  gcpstream::StreamExecutionEnvironment env;
  env.set_parallelism(1);
  env.from_source(*source, gcpstream::WatermarkStrategy<std::int64_t>::no_watermarks(), "changes")
      .sink_to(std::make_shared<gcpstream::ForEachSink<std::int64_t>>(
                   [mods](const std::int64_t& n) { mods->fetch_add(n); }),
               "count");
  auto runner = env.create_runner("spanner-changes-bench");
  std::thread watcher([&] {
    while (mods->load() < want) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    runner->cancel();
  });
  (void)runner->run();
  watcher.join();
  return mods->load();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Spanner snapshot source benchmark (against the emulator)"};
  std::int64_t n = 100000;
  int repetitions = 3;
  app.add_option("--rows", n);
  app.add_option("--repetitions", repetitions);
  std::int64_t changes = 20000;
  app.add_option("--changes", changes, "inserted rows whose change records are read");
  CLI11_PARSE(app, argc, argv);
  const char* emulator = std::getenv("SPANNER_EMULATOR_HOST");
  if (emulator == nullptr) {
    std::fprintf(stderr, "set SPANNER_EMULATOR_HOST (scripts/emulators.sh start spanner)\n");
    return 2;
  }
  const std::string endpoint = emulator;
  const auto db = Setup(endpoint, n);
  auto once = [&](bool source) {
    std::int64_t rows = 0;
    Measurement m = Measure([&] { rows = source ? Source(endpoint, db) : Raw(endpoint, db); });
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
      "Spanner snapshot read on the emulator, %lld rows of 3 columns, %d interleaved repetitions "
      "after a warm-up; medians (spread)\n",
      static_cast<long long>(n), repetitions);
  std::printf("%-34s %12s %24s\n", "reader", "rows/s", "CPU-s per 100k rows");
  once(false);
  once(true);
  const auto c = gcpstream::bench::Interleave(
      repetitions, static_cast<double>(n), [&] { return once(false); }, [&] { return once(true); });
  gcpstream::bench::PrintRow("raw ExecuteStreamingSql loop", c.base_rate, c.base_cpu, 34);
  gcpstream::bench::PrintRow("gcpstream SpannerSource (job)", c.rate, c.cpu, 34);
  std::printf(
      "source / raw throughput %.3f (goal >= 0.85)%s; CPU per row %.3f. CPU counts this process "
      "only (the emulator runs apart).\n",
      Median(c.rate) / Median(c.base_rate),
      std::max(Spread(c.base_rate), Spread(c.rate)) > 0.10 ? " inconclusive: spread > 10%" : "",
      Median(c.cpu) / Median(c.base_cpu));

  const ChangeBacklog backlog = SetupChanges(endpoint, changes);
  std::printf("\nChange stream backlog of %lld mods (one per inserted row), read to the end\n",
              static_cast<long long>(changes));
  std::printf("%-34s %10s %22s\n", "reader", "mods/s", "CPU-s per 100k mods");
  std::vector<double> raw_mods, raw_mods_cpu, src_mods, src_mods_cpu;
  for (int r = 0; r < repetitions; ++r) {
    std::int64_t got = 0;
    Measurement raw = Measure([&] { got = RawChanges(endpoint, backlog, changes); });
    if (got < changes) std::exit(1);
    raw_mods.push_back(changes / raw.wall_s);
    raw_mods_cpu.push_back(raw.cpu_s * 100000.0 / changes);
    Measurement src = Measure([&] { got = SourceChanges(endpoint, backlog, changes); });
    if (got < changes) std::exit(1);
    src_mods.push_back(changes / src.wall_s);
    src_mods_cpu.push_back(src.cpu_s * 100000.0 / changes);
  }
  std::printf("%-34s %10.0f %22.3f   (spread %.0f%% / %.0f%%)\n", "raw partition-query threads",
              Median(raw_mods), Median(raw_mods_cpu), 100 * Spread(raw_mods),
              100 * Spread(raw_mods_cpu));
  std::printf("%-34s %10.0f %22.3f   (spread %.0f%% / %.0f%%)\n",
              "gcpstream SpannerChangeStreamSource", Median(src_mods), Median(src_mods_cpu),
              100 * Spread(src_mods), 100 * Spread(src_mods_cpu));
  std::printf("source / raw mods/s %.3f; CPU per mod %.3f\n", Median(src_mods) / Median(raw_mods),
              Median(src_mods_cpu) / Median(raw_mods_cpu));
  return 0;
}
