// The BigQuery source through its public builder against the fake BigQuery's Storage Read API
// (tests/fakes/bigquery, pinned by bigquery_read_fake_test.cc): every row read once from several
// streams at parallelism 2; push-down reaching the session; a job that fails part-way restores
// each stream at its checkpointed offset, so an exactly-once sink sees every row exactly once and
// the session is never created twice; dropped connections resumed by the reader (readRetries);
// an expired session reported as such; a missing table failing with NOT_FOUND.
// Spec: ../shared/spec/bigquery.md, "Source".
#include "gcpstream/bigquery/source/bigquery_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>

#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "tests/fakes/bigquery/bigquery_fake.h"
#include "tests/support/transactional_test_sink.h"

namespace gcpstream::bigquery {
namespace {

using namespace std::chrono_literals;
using testing::BigQueryFake;
using testing::FakeOptions;
using ::testing::HasSubstr;

constexpr char kTable[] = "projects/p/datasets/d/tables/flights";

// Counts the sessions the source creates, whatever the attempt.
class CountingStub final : public BigQueryReadStub {
 public:
  CountingStub(std::shared_ptr<BigQueryReadStub> inner, std::shared_ptr<std::atomic<int>> n)
      : inner_(std::move(inner)), n_(std::move(n)) {}
  absl::StatusOr<storage_v1::ReadSession> create_read_session(
      const storage_v1::CreateReadSessionRequest& r, std::chrono::milliseconds t) override {
    ++*n_;
    return inner_->create_read_session(r, t);
  }
  std::unique_ptr<ReadRowsCall> read_rows(const storage_v1::ReadRowsRequest& r) override {
    return inner_->read_rows(r);
  }

 private:
  std::shared_ptr<BigQueryReadStub> inner_;
  std::shared_ptr<std::atomic<int>> n_;
};

class BigQuerySourceIT : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fake = BigQueryFake::Start();
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = *std::move(fake);
    ASSERT_TRUE(fake_->add_dataset("p", "d").ok());
    nlohmann::json table = {{"tableReference", {{"tableId", "flights"}}},
                            {"schema",
                             {{"fields",
                               {{{"name", "id"}, {"type", "INT64"}, {"mode", "REQUIRED"}},
                                {{"name", "origin"}, {"type", "STRING"}},
                                {{"name", "delay"}, {"type", "FLOAT64"}},
                                {{"name", "day"}, {"type", "DATE"}},
                                {{"name", "legs"},
                                 {"type", "RECORD"},
                                 {"mode", "REPEATED"},
                                 {"fields", {{{"name", "to"}, {"type", "STRING"}}}}}}}}}};
    ASSERT_TRUE(fake_->add_table("p", "d", table).ok());
  }

  void Insert(int n) {
    std::vector<nlohmann::json> rows;
    for (int i = 0; i < n; ++i) {
      rows.push_back({{"id", std::to_string(i)},
                      {"origin", i % 3 == 0 ? "SFO" : "JFK"},
                      {"delay", i % 7},
                      {"day", "2026-08-09"},
                      {"legs", {{{"to", "LAX"}}}}});
    }
    ASSERT_TRUE(fake_->insert_rows(kTable, std::move(rows)).ok());
  }

  // Emits the id, checking the typed columns agree with it.
  static absl::Status Deserialize(const BigQueryReadRow& row, Collector<std::int64_t>& out) {
    const BigQueryValue* id = row.find("id");
    if (id == nullptr) return absl::InvalidArgumentError("no id");
    GCP_ASSIGN_OR_RETURN(std::int64_t v, id->as_int64());
    if (const BigQueryValue* origin = row.find("origin")) {
      GCP_ASSIGN_OR_RETURN(std::string_view o, origin->as_string());
      if (o != (v % 3 == 0 ? "SFO" : "JFK"))
        return absl::DataLossError("origin of " + std::to_string(v));
    }
    if (const BigQueryValue* legs = row.find("legs")) {
      const nlohmann::json json = row.to_json();
      if (json["legs"][0]["to"] != "LAX")
        return absl::DataLossError("legs of " + std::to_string(v));
      (void)legs;
    }
    out.collect(v);
    return absl::OkStatus();
  }

  BigQuerySource<std::int64_t>::Builder Builder() {
    auto b = BigQuerySource<std::int64_t>::builder();
    connector::ClientOptions client;
    EXPECT_TRUE(client.set_emulator_endpoint(fake_->grpc_endpoint()).ok());
    auto real = MakeBigQueryReadStubFactory(client);
    b.table(connector::BigQueryTableDestination::of("p", "d", "flights"))
        .deserializer(&Deserialize)
        .stub_factory([real, n = sessions_]() -> absl::StatusOr<std::shared_ptr<BigQueryReadStub>> {
          GCP_ASSIGN_OR_RETURN(auto inner, real());
          return std::shared_ptr<BigQueryReadStub>(std::make_shared<CountingStub>(inner, n));
        });
    return b;
  }

  struct Seen {
    std::mutex mu;
    std::map<std::int64_t, int> counts;
  };
  runtime::JobResult Run(std::shared_ptr<BigQuerySource<std::int64_t>> source,
                         std::shared_ptr<Seen> seen, int parallelism) {
    StreamExecutionEnvironment env;
    env.set_parallelism(parallelism);
    env.from_source(source, WatermarkStrategy<std::int64_t>::no_watermarks(), "bigquery")
        .sink_to(std::make_shared<ForEachSink<std::int64_t>>([seen](const std::int64_t& v) {
                   std::lock_guard lock(seen->mu);
                   ++seen->counts[v];
                 }),
                 "seen");
    return env.execute("bigquery-source-it");
  }

  std::unique_ptr<BigQueryFake> fake_;
  std::shared_ptr<std::atomic<int>> sessions_ = std::make_shared<std::atomic<int>>(0);
};

TEST_F(BigQuerySourceIT, ReadsEveryRowOnceFromSeveralStreamsAtParallelismTwo) {
  Insert(5000);
  FakeOptions options;
  options.read_rows_per_stream = 1000;
  options.read_rows_per_response = 300;
  fake_->set_options(options);
  auto source = Builder().max_records_per_fetch(128).build();
  ASSERT_TRUE(source.ok()) << source.status();
  auto seen = std::make_shared<Seen>();
  runtime::JobResult result = Run(*source, seen, 2);
  ASSERT_TRUE(result.status.ok()) << result.status;
  ASSERT_EQ(seen->counts.size(), 5000u);
  for (const auto& [id, c] : seen->counts) ASSERT_EQ(c, 1) << id;
  EXPECT_EQ(result.metric("bigquery", "rowsRead"), 5000);
  EXPECT_EQ(result.metric("bigquery", "numRecordsIn"), 5000);
  EXPECT_GT(result.metric("bigquery", "bytesRead"), 5000);
  EXPECT_EQ(result.metric("bigquery", "readSessionsCreated"), 1);
  EXPECT_EQ(result.metric("bigquery", "queryJobsSubmitted"), 0);
  EXPECT_EQ(result.metric("bigquery", "splitsAssigned"), 5);
  EXPECT_EQ(result.metric("bigquery", "recordsSkipped"), 0);
  EXPECT_EQ(*sessions_, 1);
}

TEST_F(BigQuerySourceIT, SelectedFieldsRestrictionAndSnapshotAreAppliedByTheSession) {
  Insert(300);
  const absl::Time before_more = absl::Now();
  fake_->advance_clock(absl::Minutes(10));
  Insert(50);  // ids 0..49 again, later: a snapshot before them excludes them
  auto source = Builder()
                    .selected_fields({"id", "origin"})
                    .row_restriction("origin = 'SFO' AND id < 150")
                    .snapshot_time(before_more + absl::Minutes(1))
                    .build();
  ASSERT_TRUE(source.ok()) << source.status();
  auto seen = std::make_shared<Seen>();
  runtime::JobResult result = Run(*source, seen, 1);
  ASSERT_TRUE(result.status.ok()) << result.status;
  ASSERT_EQ(seen->counts.size(), 50u);
  for (const auto& [id, c] : seen->counts) {
    EXPECT_EQ(id % 3, 0);
    EXPECT_LT(id, 150);
    EXPECT_EQ(c, 1) << id << " read from the later rows too";
  }
}

TEST_F(BigQuerySourceIT,
       AFailedJobResumesEachStreamAtItsOffsetAndAnExactlyOnceSinkSeesEveryRowOnce) {
  Insert(4000);
  FakeOptions options;
  options.read_rows_per_stream = 1500;  // three streams
  options.read_rows_per_response = 500;
  fake_->set_options(options);
  auto source = Builder().max_records_per_fetch(50).build();
  ASSERT_TRUE(source.ok()) << source.status();
  auto sink = std::make_shared<testing::TransactionalTestSink>();
  auto passed = std::make_shared<std::atomic<int>>(0);
  auto failed = std::make_shared<std::atomic<bool>>(false);
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  env.enable_checkpointing(20ms);
  env.config().restart_strategy.kind = runtime::RestartStrategyKind::kFixedDelay;
  env.config().restart_strategy.max_attempts = 2;
  env.config().restart_strategy.delay = 10ms;
  env.from_source(*source, WatermarkStrategy<std::int64_t>::no_watermarks(), "bigquery")
      .map(
          [passed, failed](const std::int64_t& v) {
            const int n = passed->fetch_add(1);
            std::this_thread::sleep_for(200us);  // lets checkpoints complete mid-stream
            if (n == 2500 && !failed->exchange(true)) throw std::runtime_error("injected failure");
            return v;
          },
          "map")
      .sink_to(sink, "exactly-once");
  runtime::JobResult result = env.execute("bigquery-source-restore-it");
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(result.restarts, 1);
  std::map<std::int64_t, int> counts;
  for (std::int64_t v : sink->destination()->snapshot()) ++counts[v];
  ASSERT_EQ(counts.size(), 4000u) << "rows lost across the restore";
  for (const auto& [id, c] : counts) ASSERT_EQ(c, 1) << id << " seen twice by the sink";
  EXPECT_EQ(*sessions_, 1) << "the restore created a second read session";
  EXPECT_LT(passed->load(), 4000 + 2600) << "the restore read the streams from the top";
}

TEST_F(BigQuerySourceIT, DroppedReadRowsConnectionsAreResumedAndCounted) {
  Insert(1000);
  FakeOptions options;
  options.read_rows_per_response = 100;
  options.read_fail_after_rows = 250;
  options.read_fail_count = 3;
  fake_->set_options(options);
  auto source = Builder().initial_retry_delay_for_tests(1ms).build();
  ASSERT_TRUE(source.ok()) << source.status();
  auto seen = std::make_shared<Seen>();
  runtime::JobResult result = Run(*source, seen, 1);
  ASSERT_TRUE(result.status.ok()) << result.status;
  ASSERT_EQ(seen->counts.size(), 1000u);
  for (const auto& [id, c] : seen->counts) ASSERT_EQ(c, 1) << id;
  EXPECT_EQ(result.metric("bigquery", "readRetries"), 3);
}

TEST_F(BigQuerySourceIT, ARestoreAfterTheSessionExpiredFailsSayingSoWithoutLooping) {
  Insert(2000);
  FakeOptions options;
  options.read_rows_per_response = 100;
  fake_->set_options(options);
  auto source = Builder().max_records_per_fetch(20).build();
  ASSERT_TRUE(source.ok()) << source.status();
  auto passed = std::make_shared<std::atomic<int>>(0);
  auto* fake = fake_.get();
  StreamExecutionEnvironment env;
  env.enable_checkpointing(20ms);
  env.config().restart_strategy.kind = runtime::RestartStrategyKind::kFixedDelay;
  env.config().restart_strategy.max_attempts = 3;
  env.config().restart_strategy.delay = 10ms;
  env.from_source(*source, WatermarkStrategy<std::int64_t>::no_watermarks(), "bigquery")
      .map(
          [passed, fake](const std::int64_t& v) {
            const int n = passed->fetch_add(1);
            std::this_thread::sleep_for(200us);
            if (n == 500) {
              fake->advance_clock(absl::Hours(7));  // the session is past its 6 hours
              throw std::runtime_error("injected failure");
            }
            return v;
          },
          "map")
      .sink_to(std::make_shared<ForEachSink<std::int64_t>>([](const std::int64_t&) {}), "sink");
  runtime::JobResult result = env.execute("bigquery-source-expiry-it");
  ASSERT_FALSE(result.status.ok());
  EXPECT_EQ(result.status.code(), absl::StatusCode::kFailedPrecondition) << result.status;
  EXPECT_THAT(result.status.message(), HasSubstr("the read session expired at"));
  EXPECT_THAT(result.status.message(), HasSubstr("start the job over"));
  EXPECT_EQ(*sessions_, 1) << "an expired session must not be replaced by a second one";
}

TEST_F(BigQuerySourceIT, AMissingTableFailsTheJobWithNotFoundNamingIt) {
  auto source = Builder().table(connector::BigQueryTableDestination::of("p", "d", "nope")).build();
  ASSERT_TRUE(source.ok());
  auto seen = std::make_shared<Seen>();
  runtime::JobResult result = Run(*source, seen, 1);
  EXPECT_EQ(result.status.code(), absl::StatusCode::kNotFound) << result.status;
  EXPECT_THAT(result.status.message(), HasSubstr("tables/nope"));
  EXPECT_TRUE(seen->counts.empty());
}

TEST_F(BigQuerySourceIT, TheBuilderRefusesOptionsBigQueryWouldRefuse) {
  auto both = Builder().max_stream_count(2).preferred_min_stream_count(3).build();
  EXPECT_EQ(both.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(both.status().message(), HasSubstr("preferred_min_stream_count"));
  EXPECT_EQ(Builder().max_records_per_fetch(0).build().status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Builder().retry_max_attempts(0).build().status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Builder().selected_fields({"id", "ID"}).build().status().code(),
            absl::StatusCode::kInvalidArgument);
  auto no_table = BigQuerySource<std::int64_t>::builder().deserializer(&Deserialize).build();
  EXPECT_EQ(no_table.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gcpstream::bigquery
