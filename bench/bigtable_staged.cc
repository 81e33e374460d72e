// The checkpoint-owned (staged) Bigtable mode on the emulator, two comparisons:
//
// 1. Drain: one committer applying a staged batch of --writes envelopes (1 KiB SetCell each,
//    keys spread evenly over the key space) with max_in_flight_requests at --in-flight, against
//    a raw CheckAndMutateRow loop of the same requests with the same concurrency (the generated
//    callback stub; a new request built per write, as a bare client does). Writes/s and
//    CPU-seconds per 100k writes, medians of interleaved repetitions after a warm-up.
// 2. The spec's performance decision rule (../shared/spec/002, "Performance decision rule"):
//    the staged sink as a job against the at-least-once sink on the same input (--records of
//    1 KiB, parallelism 1, 1 s checkpoints), throughput until every write landed, and the gate
//    outcome. Visibility latency: the at-least-once sink's writes land within its batch round
//    trip, the staged ones no earlier than the completion of the checkpoint that staged them, so
//    its p95 is at least the checkpoint interval (1 s) by construction; the rule's latency gate
//    (at most 4x) then declines the staged mode whatever its throughput. Printed as such.
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>

#include "bench/bench_util.h"
#include "gcpstream/bigtable/admin/table_create_options.h"
#include "gcpstream/bigtable/sink/bigtable_sink.h"
#include "gcpstream/bigtable/staged/bigtable_staged_sink.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/metric_registry.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"

namespace {

using gcpstream::bench::Measure;
using gcpstream::bench::Measurement;
namespace v2 = google::bigtable::v2;
namespace bigtable = gcpstream::bigtable;

constexpr char kProject[] = "bench";
constexpr char kInstance[] = "staged";

std::string TableName(const std::string& table) {
  return std::string("projects/") + kProject + "/instances/" + kInstance + "/tables/" + table;
}

std::string CreateTable(const std::string& endpoint, const std::string& suffix) {
  const std::string table = "staged-" + std::to_string(getpid()) + "-" + suffix;
  auto admin = google::bigtable::admin::v2::BigtableTableAdmin::NewStub(
      grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
  google::bigtable::admin::v2::CreateTableRequest create;
  create.set_parent(std::string("projects/") + kProject + "/instances/" + kInstance);
  create.set_table_id(table);
  (*create.mutable_table()->mutable_column_families())["cf"];
  (*create.mutable_table()->mutable_column_families())["flink_commit"];
  google::bigtable::admin::v2::Table created;
  grpc::ClientContext ctx;
  if (!admin->CreateTable(&ctx, create, &created).ok()) std::exit(1);
  return table;
}

// Keys spread evenly over the key space (a hash of the index), 1 KiB values.
bigtable::RowMutationEntry Entry(std::int64_t i) {
  const std::uint64_t h = std::hash<std::int64_t>()(i) * 0x9E3779B97F4A7C15ull;
  bigtable::RowMutationEntry e(fmt::format("{:016x}-{}", h, i));
  e.set_cell("cf", "v", 1000, std::string(1024, 'x'));
  return e;
}

bigtable::StagedBatch Batch(const std::string& table, std::int64_t n) {
  bigtable::StagedBatch batch;
  bigtable::EnvelopeIdentities ids;
  for (std::int64_t i = 0; i < n; ++i) {
    auto r = bigtable::BuildStagedRequest(TableName(table), "", "flink_commit", Entry(i),
                                          ids.next(), 1000);
    if (!r.ok()) std::exit(1);
    batch.requests.push_back(*std::move(r));
  }
  return batch;
}

Measurement Committer(const std::string& endpoint, const std::string& table, std::int64_t n,
                      int in_flight) {
  const auto batch = Batch(table, n);
  gcpstream::connector::ClientOptions client;
  if (!client.set_emulator_endpoint(endpoint).ok()) std::exit(2);
  auto channel = gcpstream::connector::CreateChannel(client, bigtable::kBigtableTarget);
  if (!channel.ok()) std::exit(2);
  gcpstream::runtime::MetricRegistry registry;
  gcpstream::MetricGroup& metrics = registry.group({{"bench", "committer"}});
  bigtable::BigtableRequestOptions options;
  options.max_in_flight_requests = in_flight;
  bigtable::BigtableStagedCommitter committer(
      bigtable::MakeGrpcBigtableDataStub(*channel),
      [](const std::string&, const std::string&) { return absl::OkStatus(); }, options, metrics);
  std::vector<gcpstream::CommitRequest<bigtable::StagedBatch>> requests;
  requests.emplace_back(batch);
  return Measure([&] {
    if (!committer.commit(requests).ok() ||
        requests[0].outcome() !=
            gcpstream::CommitRequest<bigtable::StagedBatch>::Outcome::kSuccess) {
      std::fprintf(stderr, "commit failed: %s\n", requests[0].failure().ToString().c_str());
      std::exit(1);
    }
  });
}

Measurement RawLoop(const std::string& endpoint, const std::string& table, std::int64_t n,
                    int in_flight) {
  auto stub =
      v2::Bigtable::NewStub(grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
  bigtable::EnvelopeIdentities ids;
  return Measure([&] {
    std::mutex mu;
    std::condition_variable cv;
    int outstanding = 0;
    bool failed = false;
    struct Call {
      grpc::ClientContext context;
      v2::CheckAndMutateRowRequest request;
      v2::CheckAndMutateRowResponse response;
    };
    for (std::int64_t i = 0; i < n; ++i) {
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return outstanding < in_flight; });
        ++outstanding;
      }
      auto call = std::make_shared<Call>();
      const auto entry = Entry(i);
      call->request.set_table_name(TableName(table));
      call->request.set_row_key(entry.row_key());
      auto* chain = call->request.mutable_predicate_filter()->mutable_chain();
      chain->add_filters()->set_family_name_regex_filter("flink_commit");
      const std::string id = ids.next();
      chain->add_filters()->set_column_qualifier_regex_filter(id);
      for (const auto& m : entry.proto().mutations()) *call->request.add_false_mutations() = m;
      auto* marker = call->request.add_false_mutations()->mutable_set_cell();
      marker->set_family_name("flink_commit");
      marker->set_column_qualifier(id);
      marker->set_timestamp_micros(1000);
      stub->async()->CheckAndMutateRow(&call->context, &call->request, &call->response,
                                       [&, call](grpc::Status status) {
                                         std::lock_guard lock(mu);
                                         if (!status.ok()) failed = true;
                                         --outstanding;
                                         cv.notify_all();
                                       });
    }
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return outstanding == 0; });
    if (failed) std::exit(1);
  });
}

// A job writing `n` 1 KiB records, staged or at least once; its wall time to the end (every
// write landed: the staged sink's final commit included).
Measurement Job(const std::string& endpoint, const std::string& table, std::int64_t n,
                bool staged) {
  gcpstream::StreamExecutionEnvironment env;
  env.set_parallelism(1);
  env.enable_checkpointing(std::chrono::seconds(1));
  auto input = env.from_source(std::make_shared<gcpstream::NumberSequenceSource>(0, n - 1, 1),
                               gcpstream::WatermarkStrategy<std::int64_t>::no_watermarks(), "n");
  auto schema = bigtable::BigtableSerializationSchema<std::int64_t>::of(
      [](const std::int64_t& i, const gcpstream::SinkWriterContext&) {
        return std::optional<bigtable::RowMutationEntry>(Entry(i));
      });
  const auto dest = gcpstream::connector::TableDestination::of(kProject, kInstance, table);
  if (staged) {
    bigtable::BigtableStagedOptions options;
    options.marker_family = "flink_commit";
    auto sink = bigtable::BigtableStagedSink<std::int64_t>::builder()
                    .table(dest)
                    .app_profile_id("transactional")
                    .emulator_endpoint(endpoint)
                    .staged_options(options)
                    .serializer(schema)
                    .build();
    if (!sink.ok()) std::exit(1);
    input.sink_to(*sink, "staged");
  } else {
    auto sink = bigtable::BigtableSink<std::int64_t>::builder()
                    .table(dest)
                    .emulator_endpoint(endpoint)
                    .serializer(schema)
                    .build();
    if (!sink.ok()) std::exit(1);
    input.sink_to(*sink, "plain");
  }
  return Measure([&] {
    auto result = env.execute("staged-bench");
    if (!result.status.ok()) {
      std::fprintf(stderr, "job failed: %s\n", result.status.ToString().c_str());
      std::exit(1);
    }
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Bigtable staged (exactly-once) mode benchmark (against the emulator)"};
  std::int64_t writes = 20000;
  std::int64_t records = 20000;
  int in_flight = 100;
  int repetitions = 3;
  app.add_option("--writes", writes, "envelopes one commit drains");
  app.add_option("--records", records, "records of the job comparison");
  app.add_option("--in-flight", in_flight, "max_in_flight_requests (and the raw loop's window)");
  app.add_option("--repetitions", repetitions);
  CLI11_PARSE(app, argc, argv);
  const char* emulator = std::getenv("BIGTABLE_EMULATOR_HOST");
  if (emulator == nullptr) {
    std::fprintf(stderr, "set BIGTABLE_EMULATOR_HOST (scripts/emulators.sh start bigtable)\n");
    return 2;
  }
  const std::string endpoint = emulator;
  using gcpstream::bench::Median;
  using gcpstream::bench::Spread;
  int round = 0;
  auto fresh = [&] { return CreateTable(endpoint, std::to_string(round++)); };

  std::printf(
      "1. Drain: %lld CheckAndMutateRow writes of 1 KiB on even keys, %d in flight, %d "
      "interleaved repetitions after a warm-up; medians (spread)\n",
      static_cast<long long>(writes), in_flight, repetitions);
  std::printf("%-34s %12s %24s\n", "writer", "writes/s", "CPU-s per 100k writes");
  RawLoop(endpoint, fresh(), writes, in_flight);
  Committer(endpoint, fresh(), writes, in_flight);
  const auto drain = gcpstream::bench::Interleave(
      repetitions, static_cast<double>(writes),
      [&] { return RawLoop(endpoint, fresh(), writes, in_flight); },
      [&] { return Committer(endpoint, fresh(), writes, in_flight); });
  gcpstream::bench::PrintRow("raw CheckAndMutateRow loop", drain.base_rate, drain.base_cpu, 34);
  gcpstream::bench::PrintRow("staged committer", drain.rate, drain.cpu, 34);
  std::printf("committer / raw writes/s %.3f%s; CPU per write %.3f\n\n",
              Median(drain.rate) / Median(drain.base_rate),
              std::max(Spread(drain.base_rate), Spread(drain.rate)) > 0.10
                  ? " (inconclusive: spread > 10%)"
                  : "",
              Median(drain.cpu) / Median(drain.base_cpu));

  std::printf(
      "2. Decision rule: %lld records of 1 KiB, parallelism 1, 1 s checkpoints, until every "
      "write landed\n",
      static_cast<long long>(records));
  std::printf("%-34s %12s %24s\n", "sink", "records/s", "CPU-s per 100k records");
  Job(endpoint, fresh(), records, false);
  Job(endpoint, fresh(), records, true);
  const auto gate = gcpstream::bench::Interleave(
      repetitions, static_cast<double>(records),
      [&] { return Job(endpoint, fresh(), records, false); },
      [&] { return Job(endpoint, fresh(), records, true); });
  gcpstream::bench::PrintRow("at-least-once sink (MutateRows)", gate.base_rate, gate.base_cpu, 34);
  gcpstream::bench::PrintRow("staged sink (exactly once)", gate.rate, gate.cpu, 34);
  const double ratio = Median(gate.rate) / Median(gate.base_rate);
  const bool inconclusive = std::max(Spread(gate.base_rate), Spread(gate.rate)) > 0.10;
  std::printf(
      "staged / at-least-once throughput %.3f%s. Throughput gate: %s. Latency gate: declined "
      "(staged visibility waits for the 1 s checkpoint, so its p95 is at least 1 s, beyond 4x "
      "the at-least-once sink's batch round trip). Outcome: decline.\n",
      ratio, inconclusive ? " (inconclusive: spread > 10%)" : "",
      ratio >= 0.70   ? "general (>= 70%)"
      : ratio >= 0.25 ? "constrained opt-in (>= 25%)"
                      : "decline (< 25%)");
  return 0;
}
