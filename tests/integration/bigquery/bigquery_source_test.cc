// The BigQuery source through its public builder against the fake BigQuery's Storage Read API
// (tests/fakes/bigquery, pinned by bigquery_read_fake_test.cc): every row read once from several
// streams at parallelism 2; push-down reaching the session; a job that fails part-way restores
// each stream at its checkpointed offset, so an exactly-once sink sees every row exactly once and
// the session is never created twice; dropped connections resumed by the reader (readRetries);
// an expired session reported as such; a missing table failing with NOT_FOUND. The query route:
// one query job, its result read; a restore never runs it again; reuse_query_result_within
// adopting an earlier attempt's job and passing over a failed one (query_job_runner_test.cc has
// the rest of the job's life); a failed query failing the job with its reason. Spec:
// ../shared/spec/bigquery.md, "Source" and "Reading a query or a view".
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
    b.table(connector::BigQueryTableDestination::of("p", "d", "flights"))
        .deserializer(&Deserialize)
        .stub_factory(CountingStubs());
    return b;
  }

  // A source against the fake's gRPC and REST ports, its jobs polled every few milliseconds.
  BigQuerySource<std::int64_t>::Builder FakeJobsBuilder() {
    auto b = BigQuerySource<std::int64_t>::builder();
    b.emulator_endpoint(fake_->grpc_endpoint())
        .emulator_rest_endpoint(fake_->rest_endpoint())
        .query_poll_backoff_for_tests(2ms, 10ms)
        .deserializer(&Deserialize)
        .stub_factory(CountingStubs());
    return b;
  }
  // The query route.
  BigQuerySource<std::int64_t>::Builder QueryBuilder(const std::string& sql) {
    auto b = FakeJobsBuilder();
    b.query(sql).parent_project("p");
    return b;
  }
  // The table route over `table` with materialize_views.
  BigQuerySource<std::int64_t>::Builder ViewBuilder(const std::string& table) {
    auto b = FakeJobsBuilder();
    b.table(connector::BigQueryTableDestination::of("p", "d", table)).materialize_views();
    return b;
  }
  // The view `id` over the SFO flights: logical, or materialized.
  void AddSfoView(const std::string& id, bool materialized) {
    const nlohmann::json query = {
        {"query", "SELECT id, origin, delay FROM `p.d.flights` WHERE origin = 'SFO'"}};
    nlohmann::json view = {{"tableReference", {{"tableId", id}}},
                           {materialized ? "materializedView" : "view", query}};
    ASSERT_TRUE(fake_->add_table("p", "d", view).ok());
  }

  BigQueryReadStubFactory CountingStubs() {
    connector::ClientOptions client;
    EXPECT_TRUE(client.set_emulator_endpoint(fake_->grpc_endpoint()).ok());
    auto real = MakeBigQueryReadStubFactory(client);
    return [real, n = sessions_]() -> absl::StatusOr<std::shared_ptr<BigQueryReadStub>> {
      GCP_ASSIGN_OR_RETURN(auto inner, real());
      return std::shared_ptr<BigQueryReadStub>(std::make_shared<CountingStub>(inner, n));
    };
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

  // Runs `source` at parallelism 2 with 20 ms checkpoints into an exactly-once sink; the map
  // waits `per_record` on each record (so checkpoints complete mid-stream) and throws once, at
  // record `fail_at`, after calling `before_failure`. One restart is allowed.
  struct FailedOnce {
    runtime::JobResult result;
    std::map<std::int64_t, int> counts;  // how often the sink saw each value
    int passed = 0;                      // records through the map, both attempts
  };
  FailedOnce RunFailingOnce(std::shared_ptr<BigQuerySource<std::int64_t>> source, int fail_at,
                            std::chrono::microseconds per_record,
                            std::function<void()> before_failure = nullptr) {
    auto sink = std::make_shared<testing::TransactionalTestSink>();
    auto passed = std::make_shared<std::atomic<int>>(0);
    auto failed = std::make_shared<std::atomic<bool>>(false);
    StreamExecutionEnvironment env;
    env.set_parallelism(2);
    env.enable_checkpointing(20ms);
    env.config().restart_strategy.kind = runtime::RestartStrategyKind::kFixedDelay;
    env.config().restart_strategy.max_attempts = 2;
    env.config().restart_strategy.delay = 10ms;
    env.from_source(source, WatermarkStrategy<std::int64_t>::no_watermarks(), "bigquery")
        .map(
            [=](const std::int64_t& v) {
              const int n = passed->fetch_add(1);
              std::this_thread::sleep_for(per_record);
              if (n == fail_at && !failed->exchange(true)) {
                if (before_failure) before_failure();
                throw std::runtime_error("injected failure");
              }
              return v;
            },
            "map")
        .sink_to(sink, "exactly-once");
    FailedOnce out;
    out.result = env.execute("bigquery-source-restore-it");
    for (std::int64_t v : sink->destination()->snapshot()) ++out.counts[v];
    out.passed = passed->load();
    return out;
  }

  // Runs a source reading the SFO flights (1000 of the 3000 inserted) at parallelism 2 and
  // checks each arrived once and nothing else did.
  void ReadEverySfoFlightOnce(BigQuerySource<std::int64_t>::Builder builder,
                              runtime::JobResult* result) {
    auto source = builder.build();
    ASSERT_TRUE(source.ok()) << source.status();
    auto seen = std::make_shared<Seen>();
    *result = Run(*source, seen, 2);
    ASSERT_TRUE(result->status.ok()) << result->status;
    ASSERT_EQ(seen->counts.size(), 1000u);
    for (const auto& [id, c] : seen->counts) {
      ASSERT_EQ(id % 3, 0) << "a row the query's WHERE excluded";
      ASSERT_EQ(c, 1) << id;
    }
  }

  // Runs a source reading the SFO flights (1000 of the 3000 inserted) through one query job,
  // failing once after checkpoints completed and adding SFO rows before the failure: the
  // restore must read the first result only (a second query would see the new rows), each row
  // once, from the one session.
  void ExpectTheRestoreReadsTheFirstResult(BigQuerySource<std::int64_t>::Builder builder) {
    FakeOptions options;
    options.read_rows_per_stream = 300;
    options.read_rows_per_response = 100;
    fake_->set_options(options);
    auto source = builder.max_records_per_fetch(20).build();
    ASSERT_TRUE(source.ok()) << source.status();
    const FailedOnce run = RunFailingOnce(*source, 600, 300us, [this] {
      std::vector<nlohmann::json> more;
      for (int i = 0; i < 30; ++i) {
        more.push_back({{"id", std::to_string(90000 + 3 * i)}, {"origin", "SFO"}});
      }
      EXPECT_TRUE(fake_->insert_rows(kTable, std::move(more)).ok());
    });
    ASSERT_TRUE(run.result.status.ok()) << run.result.status;
    EXPECT_EQ(run.result.restarts, 1);
    ASSERT_EQ(run.counts.size(), 1000u) << "the restore must read the first query's result only";
    for (const auto& [id, c] : run.counts) ASSERT_EQ(c, 1) << id << " seen twice by the sink";
    EXPECT_EQ(fake_->jobs().jobs_created(), 1) << "the restore ran the query again";
    EXPECT_EQ(*sessions_, 1);
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
  const FailedOnce run = RunFailingOnce(*source, 2500, 200us);
  ASSERT_TRUE(run.result.status.ok()) << run.result.status;
  EXPECT_EQ(run.result.restarts, 1);
  ASSERT_EQ(run.counts.size(), 4000u) << "rows lost across the restore";
  for (const auto& [id, c] : run.counts) ASSERT_EQ(c, 1) << id << " seen twice by the sink";
  EXPECT_EQ(*sessions_, 1) << "the restore created a second read session";
  EXPECT_LT(run.passed, 4000 + 2600) << "the restore read the streams from the top";
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

constexpr char kSfoQuery[] = "SELECT id, origin FROM `p.d.flights` WHERE origin = 'SFO'";

TEST_F(BigQuerySourceIT, AQuerySourceRunsOneJobAndReadsItsResultFromSeveralStreams) {
  Insert(3000);
  fake_->jobs().set_options(/*polls_until_done=*/3, 0);
  FakeOptions options;
  options.read_rows_per_stream = 400;
  fake_->set_options(options);
  runtime::JobResult result;
  ASSERT_NO_FATAL_FAILURE(ReadEverySfoFlightOnce(QueryBuilder(kSfoQuery), &result));
  EXPECT_EQ(result.metric("bigquery", "queryJobsSubmitted"), 1);
  EXPECT_EQ(result.metric("bigquery", "queryJobsReattached"), 0);
  EXPECT_EQ(result.metric("bigquery", "readSessionsCreated"), 1);
  EXPECT_EQ(result.metric("bigquery", "splitsAssigned"), 3);
  EXPECT_EQ(fake_->jobs().jobs_created(), 1);
}

TEST_F(BigQuerySourceIT, ARestoredQuerySourceReadsTheFirstResultAndNeverRunsTheQueryAgain) {
  Insert(3000);
  ExpectTheRestoreReadsTheFirstResult(QueryBuilder(kSfoQuery));
}

TEST_F(BigQuerySourceIT, AReuseWindowAdoptsTheEarlierAttemptsJobAndProbesPastAFailedOne) {
  Insert(300);
  auto reusing = [&](const std::string& sql) {
    return QueryBuilder(sql)
        .query_location("US")
        .reuse_query_result_within(std::chrono::hours(1), "flights-report")
        .build();
  };
  // First attempt: the query fails (no such table yet).
  const std::string late = "SELECT id FROM `p.d.late`";
  auto source = reusing(late);
  ASSERT_TRUE(source.ok()) << source.status();
  auto seen = std::make_shared<Seen>();
  runtime::JobResult result = Run(*source, seen, 1);
  ASSERT_EQ(result.status.code(), absl::StatusCode::kNotFound) << result.status;
  EXPECT_THAT(result.status.message(), HasSubstr("gcpstream_query_"));
  EXPECT_THAT(result.status.message(), HasSubstr("reason notFound"));
  // The table appears; a re-plan probes past the failed job to a retry id.
  nlohmann::json table = {{"tableReference", {{"tableId", "late"}}},
                          {"schema", {{"fields", {{{"name", "id"}, {"type", "INT64"}}}}}}};
  ASSERT_TRUE(fake_->add_table("p", "d", table).ok());
  ASSERT_TRUE(
      fake_->insert_rows("projects/p/datasets/d/tables/late", {{{"id", "7"}}, {{"id", "8"}}}).ok());
  result = Run(*reusing(late), seen, 1);
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(result.metric("bigquery", "queryJobsSubmitted"), 1);
  EXPECT_EQ(fake_->jobs().jobs_created(), 2);
  // A third attempt inside the window adopts that finished job: no new query.
  seen = std::make_shared<Seen>();
  result = Run(*reusing(late), seen, 1);
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(result.metric("bigquery", "queryJobsSubmitted"), 0);
  EXPECT_EQ(result.metric("bigquery", "queryJobsReattached"), 1);
  EXPECT_EQ(fake_->jobs().jobs_created(), 2);
  EXPECT_EQ(seen->counts.size(), 2u);
  // Another query, or another job name, is another job.
  result = Run(*reusing(kSfoQuery), std::make_shared<Seen>(), 1);
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(result.metric("bigquery", "queryJobsSubmitted"), 1);
  EXPECT_EQ(fake_->jobs().jobs_created(), 3);
}

TEST_F(BigQuerySourceIT, AQueryTheServiceRefusesFailsTheJobWithItsReasonAndNoSession) {
  auto source = QueryBuilder("SELECT origin, COUNT(*) FROM `p.d.flights` GROUP BY origin").build();
  ASSERT_TRUE(source.ok()) << source.status();
  runtime::JobResult result = Run(*source, std::make_shared<Seen>(), 1);
  EXPECT_EQ(result.status.code(), absl::StatusCode::kInvalidArgument) << result.status;
  EXPECT_THAT(result.status.message(), HasSubstr("reason invalidQuery"));
  EXPECT_EQ(*sessions_, 0);
  EXPECT_EQ(result.metric("bigquery", "queryJobsSubmitted"), 1)
      << "the failed query was still submitted, and billed";
}

TEST_F(BigQuerySourceIT, TheBuilderRefusesQueryOptionsThatCannotWork) {
  auto both = QueryBuilder(kSfoQuery)
                  .table(connector::BigQueryTableDestination::of("p", "d", "flights"))
                  .build();
  EXPECT_THAT(both.status().message(), HasSubstr("not both"));
  auto no_project = QueryBuilder(kSfoQuery).parent_project("").build();
  EXPECT_THAT(no_project.status().message(), HasSubstr("parent_project"));
  auto snapshot = QueryBuilder(kSfoQuery).snapshot_time(absl::Now()).build();
  EXPECT_THAT(snapshot.status().message(), HasSubstr("FOR SYSTEM_TIME AS OF"));
  auto no_location =
      QueryBuilder(kSfoQuery).reuse_query_result_within(std::chrono::hours(1), "j").build();
  EXPECT_THAT(no_location.status().message(), HasSubstr("query_location"));
  auto too_long = QueryBuilder(kSfoQuery)
                      .query_location("US")
                      .reuse_query_result_within(std::chrono::hours(25), "j")
                      .build();
  EXPECT_THAT(too_long.status().message(), HasSubstr("24 h"));
  auto no_rest = BigQuerySource<std::int64_t>::builder()
                     .query(kSfoQuery)
                     .parent_project("p")
                     .emulator_endpoint(fake_->grpc_endpoint())
                     .deserializer(&Deserialize)
                     .build();
  EXPECT_THAT(no_rest.status().message(), HasSubstr("emulator_rest_endpoint"));
  auto table_with_query_option = Builder().query_location("EU").build();
  EXPECT_THAT(table_with_query_option.status().message(), HasSubstr("with materialize_views only"));
  auto bad_dataset = QueryBuilder(kSfoQuery).query_result_dataset("d.x").build();
  EXPECT_THAT(bad_dataset.status().message(), HasSubstr("not a dataset id"));
  auto rest_on_a_table = Builder().emulator_rest_endpoint(fake_->rest_endpoint()).build();
  EXPECT_THAT(rest_on_a_table.status().message(), HasSubstr("query source only"));
  auto rest_alone = BigQuerySource<std::int64_t>::builder()
                        .query(kSfoQuery)
                        .parent_project("p")
                        .emulator_rest_endpoint(fake_->rest_endpoint())
                        .deserializer(&Deserialize)
                        .build();
  EXPECT_THAT(rest_alone.status().message(), HasSubstr("goes with emulator_endpoint"));
  for (const auto* s : {&both, &no_project, &snapshot, &no_location, &too_long, &no_rest,
                        &table_with_query_option, &bad_dataset, &rest_on_a_table, &rest_alone}) {
    EXPECT_EQ(s->status().code(), absl::StatusCode::kInvalidArgument) << s->status();
  }
}

// "Reading a view without writing the query": with materialize_views a view, logical or
// materialized, is read through one query job selecting from it, the selected fields folded
// into that SELECT.
TEST_F(BigQuerySourceIT, MaterializeViewsReadsAViewThroughOneQueryWithTheFieldsFolded) {
  Insert(3000);
  AddSfoView("sfo", /*materialized=*/false);
  AddSfoView("sfo_mv", /*materialized=*/true);
  int jobs = 0;
  for (const std::string view : {"sfo", "sfo_mv"}) {
    SCOPED_TRACE(view);
    runtime::JobResult result;
    ASSERT_NO_FATAL_FAILURE(
        ReadEverySfoFlightOnce(ViewBuilder(view).selected_fields({"id", "origin"}), &result));
    EXPECT_EQ(result.metric("bigquery", "queryJobsSubmitted"), 1);
    EXPECT_EQ(result.metric("bigquery", "readSessionsCreated"), 1);
    ++jobs;
    ASSERT_EQ(fake_->jobs().queries().size(), static_cast<std::size_t>(jobs));
    EXPECT_EQ(fake_->jobs().queries().back(), "SELECT `id`, `origin` FROM `p.d." + view + "`");
  }
}

// Found by an attack: a restriction on a column not selected must still find it in the result.
TEST_F(BigQuerySourceIT, AViewsRowRestrictionMayNameAColumnNotSelected) {
  Insert(3000);
  AddSfoView("sfo", /*materialized=*/false);
  auto source = ViewBuilder("sfo").selected_fields({"id"}).row_restriction("delay = 0").build();
  ASSERT_TRUE(source.ok()) << source.status();
  auto seen = std::make_shared<Seen>();
  runtime::JobResult result = Run(*source, seen, 1);
  ASSERT_TRUE(result.status.ok()) << result.status;
  std::size_t want = 0;
  for (int i = 0; i < 3000; ++i) want += (i % 3 == 0 && i % 7 == 0) ? 1 : 0;
  EXPECT_EQ(seen->counts.size(), want);
  for (const auto& [id, c] : seen->counts) EXPECT_EQ(id % 21, 0) << id;
  EXPECT_EQ(fake_->jobs().queries().back(), "SELECT * FROM `p.d.sfo`");
}

TEST_F(BigQuerySourceIT, MaterializeViewsReadsAnOrdinaryTableDirectlyWithoutAJob) {
  Insert(300);
  auto source = ViewBuilder("flights").build();
  ASSERT_TRUE(source.ok()) << source.status();
  auto seen = std::make_shared<Seen>();
  runtime::JobResult result = Run(*source, seen, 1);
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(seen->counts.size(), 300u);
  EXPECT_EQ(result.metric("bigquery", "queryJobsSubmitted"), 0);
  EXPECT_EQ(fake_->jobs().jobs_created(), 0);
}

// The restored session reads the view's first result: the source names the view while its
// state's session reads the query's result table, and no second query runs.
TEST_F(BigQuerySourceIT, ARestoredViewSourceReadsTheFirstResultWithoutASecondQuery) {
  Insert(3000);
  AddSfoView("sfo", /*materialized=*/false);
  ExpectTheRestoreReadsTheFirstResult(ViewBuilder("sfo"));
}

TEST_F(BigQuerySourceIT, TheBuilderRefusesMaterializeViewsWhereItCannotWork) {
  auto snapshot = ViewBuilder("sfo").snapshot_time(absl::Now()).build();
  EXPECT_THAT(snapshot.status().message(), HasSubstr("snapshot_time cannot go with"));
  auto with_query = QueryBuilder(kSfoQuery).materialize_views().build();
  EXPECT_THAT(with_query.status().message(), HasSubstr("materialize_views goes with table"));
  auto no_rest = BigQuerySource<std::int64_t>::builder()
                     .table(connector::BigQueryTableDestination::of("p", "d", "sfo"))
                     .materialize_views()
                     .emulator_endpoint(fake_->grpc_endpoint())
                     .deserializer(&Deserialize)
                     .build();
  EXPECT_THAT(no_rest.status().message(), HasSubstr("emulator_rest_endpoint"));
  auto no_location = ViewBuilder("sfo").reuse_query_result_within(1h, "j").build();
  EXPECT_THAT(no_location.status().message(), HasSubstr("needs query_location"));
  for (const auto* s : {&snapshot, &with_query, &no_rest, &no_location}) {
    EXPECT_EQ(s->status().code(), absl::StatusCode::kInvalidArgument) << s->status();
  }
}

}  // namespace
}  // namespace gcpstream::bigquery
