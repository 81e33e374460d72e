// The query job of a BigQuerySource's query route (RunQueryJob) against the fake's REST jobs:
// the location the service reports is used for every later call; a lost jobs.insert answer
// finds its own job; under reuse_query_result_within a running earlier attempt is waited for and
// adopted, a finished one adopted while its result table exists, and one that failed, is older
// than the window or lost its table is passed over; ids of one window never pile up into the
// next; a result in a named dataset always gets its one-day expiration; a cancelled wait stops;
// a checkpoint taken while the query runs lets a restore wait for that same job.
// Spec: ../shared/spec/bigquery.md, "Reading a query or a view", "Where the result lands",
// "Reusing the query job across a failover".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <thread>

#include "gcpstream/bigquery/source/query_job.h"
#include "gcpstream/bigquery/source/read_session_enumerator.h"
#include "gcpstream/runtime/metric_registry.h"
#include "tests/support/bigquery_staging_fixture.h"

namespace gcpstream::bigquery {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kQuery[] = "SELECT id FROM `p.d.flights` WHERE id < 10";
// A fixed instant in the middle of a one-hour window, so every run here is in the same window.
const absl::Time kNow = absl::FromUnixSeconds(1796625000 / 3600 * 3600 + 1800);

class QueryJobRunnerIT : public testing::BigQueryStagingTest {
 protected:
  void SetUp() override {
    BigQueryStagingTest::SetUp();
    AddFlights("p", "d");
  }

  void AddFlights(const std::string& project, const std::string& dataset) {
    json table = {{"tableReference", {{"tableId", "flights"}}},
                  {"schema", {{"fields", {{{"name", "id"}, {"type", "INT64"}}}}}}};
    ASSERT_TRUE(fake_->add_table(project, dataset, table).ok());
    std::vector<json> rows;
    for (int i = 0; i < 30; ++i) rows.push_back({{"id", std::to_string(i)}});
    ASSERT_TRUE(
        fake_->insert_rows("projects/" + project + "/datasets/" + dataset + "/tables/flights", rows)
            .ok());
  }

  static QueryJobSpec Reusing(const std::string& result_dataset = "") {
    return QueryJobSpec{.query = kQuery,
                        .project = "p",
                        .location = "US",
                        .result_dataset = result_dataset,
                        .reuse_within = 1h,
                        .job_name = "nightly",
                        .poll_initial = 1ms,
                        .poll_max = 5ms};
  }

  // `submitted` (may be null) collects each job created, as QueryJobRef.
  absl::StatusOr<QueryJobOutcome> Run(const QueryJobSpec& spec, absl::Time now = kNow,
                                      std::vector<std::string>* submitted = nullptr,
                                      const std::atomic<bool>* cancelled = nullptr) {
    auto mu = std::make_shared<std::mutex>();
    return RunQueryJob(
        *admin_, spec, cancelled,
        [submitted, mu](const std::string& id, const std::string& location) {
          std::lock_guard lock(*mu);
          if (submitted != nullptr) submitted->push_back(QueryJobRef(id, location));
        },
        [now] { return now; });
  }

  static std::int64_t Bucket(absl::Time t) { return absl::ToUnixMillis(t) / 3600000; }
};

TEST_F(QueryJobRunnerIT, ARegionalJobIsPolledWithTheLocationTheServiceReported) {
  ASSERT_TRUE(fake_->add_dataset("p", "tokyo", "asia-northeast1").ok());
  AddFlights("p", "tokyo");
  fake_->jobs().set_options(/*polls_until_done=*/3, 0);
  QueryJobSpec spec{.query = "SELECT id FROM `p.tokyo.flights`",
                    .project = "p",
                    .poll_initial = 1ms,
                    .poll_max = 5ms};
  std::vector<std::string> submitted;
  auto outcome = Run(spec, kNow, &submitted);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->location, "asia-northeast1");
  EXPECT_THAT(submitted, ::testing::ElementsAre(outcome->job_id + "@asia-northeast1"));
  EXPECT_EQ(fake_->rows(outcome->result_table)->size(), 30u);
}

TEST_F(QueryJobRunnerIT, ALostInsertAnswerFindsItsOwnJobAndRunsTheQueryOnce) {
  fake_->jobs().set_options(1, /*lose_insert_responses=*/1);
  std::vector<std::string> submitted;
  auto outcome =
      Run(QueryJobSpec{.query = kQuery, .project = "p", .poll_initial = 1ms, .poll_max = 5ms},
          absl::Now(), &submitted);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_FALSE(outcome->reattached);
  EXPECT_EQ(submitted.size(), 1u);
  EXPECT_EQ(fake_->jobs().jobs_created(), 1);
  EXPECT_EQ(fake_->rows(outcome->result_table)->size(), 10u);
}

TEST_F(QueryJobRunnerIT, AnAttemptStillRunningIsWaitedForAdoptedAndItsResultGetsItsExpiration) {
  fake_->jobs().set_options(/*polls_until_done=*/1000000, 0);  // runs until told otherwise
  std::atomic<bool> cancelled{false};
  std::vector<std::string> first_submitted;
  auto first = std::async(std::launch::async,
                          [&] { return Run(Reusing("d"), kNow, &first_submitted, &cancelled); });
  for (int i = 0; i < 500 && fake_->jobs().jobs_created() == 0; ++i)
    std::this_thread::sleep_for(2ms);
  ASSERT_EQ(fake_->jobs().jobs_created(), 1) << "the first attempt submitted nothing in 1 s";
  std::this_thread::sleep_for(20ms);
  cancelled = true;  // the first attempt stops while its query runs
  ASSERT_EQ(first.wait_for(5s), std::future_status::ready) << "a cancelled wait did not stop";
  EXPECT_EQ(first.get().status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(first_submitted.size(), 1u) << "the cancelled attempt's job is still reported";

  auto second = std::async(std::launch::async, [&] { return Run(Reusing("d")); });
  std::this_thread::sleep_for(30ms);
  fake_->jobs().set_options(/*polls_until_done=*/1, 0);  // the query finishes now
  ASSERT_EQ(second.wait_for(10s), std::future_status::ready);
  auto adopted = second.get();
  ASSERT_TRUE(adopted.ok()) << adopted.status();
  EXPECT_TRUE(adopted->reattached);
  EXPECT_EQ(adopted->job_id, ReusableQueryJobId(Reusing("d"), Bucket(kNow)));
  EXPECT_EQ(fake_->jobs().jobs_created(), 1) << "the query ran twice";
  auto table = fake_->table("p", "d", "gcpstream_result_" + adopted->job_id);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_TRUE(table->contains("expirationTime"))
      << "an adopted result the first attempt never got to expire expires too";
}

TEST_F(QueryJobRunnerIT, AnAttemptOlderThanTheWindowOrWhoseTableVanishedIsPassedOver) {
  auto first = Run(Reusing("d"));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->job_id, ReusableQueryJobId(Reusing("d"), Bucket(kNow)));
  auto inside = Run(Reusing("d"), kNow + absl::Minutes(10));
  ASSERT_TRUE(inside.ok()) << inside.status();
  EXPECT_TRUE(inside->reattached);
  EXPECT_EQ(inside->result_table, first->result_table);

  // The result table is deleted by hand: the next plan runs the query again, under a retry id.
  const std::string table = "gcpstream_result_" + first->job_id;
  ASSERT_TRUE(fake_->delete_table("p", "d", table).ok());
  std::vector<std::string> submitted;
  auto vanished = Run(Reusing("d"), kNow + absl::Minutes(11), &submitted);
  ASSERT_TRUE(vanished.ok()) << vanished.status();
  EXPECT_FALSE(vanished->reattached);
  EXPECT_EQ(vanished->job_id, first->job_id + "_r1");
  EXPECT_EQ(submitted.size(), 1u);
}

TEST_F(QueryJobRunnerIT, TheNextWindowAdoptsARecentAttemptAndIdsNeverPileUpAcrossWindows) {
  // The fake stamps jobs with the real clock: windows are placed around it.
  const absl::Time real = absl::Now();
  auto first = Run(Reusing(), real);
  ASSERT_TRUE(first.ok()) << first.status();
  // Into the next window, but within an hour of the first attempt: its job is adopted.
  const absl::Time next = absl::FromUnixMillis((Bucket(real) + 1) * 3600000 + 1);
  auto adopted = Run(Reusing(), next);
  ASSERT_TRUE(adopted.ok()) << adopted.status();
  EXPECT_TRUE(adopted->reattached) << "an attempt from the previous window, still inside it";
  EXPECT_EQ(adopted->job_id, first->job_id);
  // Two windows on, the attempt is stale: a fresh id of that window, not a growing retry chain.
  const absl::Time later = real + absl::Hours(2);
  auto fresh = Run(Reusing(), later);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_FALSE(fresh->reattached);
  EXPECT_EQ(fresh->job_id, ReusableQueryJobId(Reusing(), Bucket(later)));
  EXPECT_EQ(fake_->jobs().jobs_created(), 2);
}

TEST_F(QueryJobRunnerIT, AFailedAttemptIsPassedOverAndAFailedQueryKeepsItsReason) {
  QueryJobSpec spec = Reusing();
  spec.query = "SELECT id FROM `p.d.later`";
  auto failed = Run(spec);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kNotFound) << failed.status();
  EXPECT_THAT(failed.status().message(), HasSubstr("reason notFound"));
  EXPECT_THAT(failed.status().message(), HasSubstr(ReusableQueryJobId(spec, Bucket(kNow))));
  json table = {{"tableReference", {{"tableId", "later"}}},
                {"schema", {{"fields", {{{"name", "id"}, {"type", "INT64"}}}}}}};
  ASSERT_TRUE(fake_->add_table("p", "d", table).ok());
  auto retried = Run(spec);
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_EQ(retried->job_id, ReusableQueryJobId(spec, Bucket(kNow)) + "_r1");
}

// A coordinator whose worker is a thread of its own; coordinator-thread work runs on that worker
// under `mu`, which the test holds around its own calls into the enumerator.
class ThreadedCoordinator final : public SplitEnumeratorContext<ReadStreamSplit> {
 public:
  ~ThreadedCoordinator() override {
    for (auto& t : workers_) t.join();
  }
  int current_parallelism() const override { return 1; }
  std::vector<int> registered_readers() const override { return {0}; }
  void assign_splits(int, std::vector<ReadStreamSplit>) override {}
  void signal_no_more_splits(int) override {}
  void send_event_to_source_reader(int, std::shared_ptr<const SourceEvent>) override {}
  void run_in_coordinator_thread(absl::AnyInvocable<void() &&> fn) override {
    std::lock_guard lock(mu);
    std::move(fn)();
    planned = true;
  }
  void run_on_worker(absl::AnyInvocable<void() &&> fn) override {
    workers_.emplace_back(std::move(fn));
  }
  void fail_job(absl::Status status) override { failure = std::move(status); }
  MetricGroup& metric_group() override { return registry_.group({{"test", "enumerator"}}); }
  std::int64_t metric(const std::string& name) {
    return registry_.group({{"test", "enumerator"}}).counter(name).get();
  }

  std::mutex mu;
  std::atomic<bool> planned{false};
  absl::Status failure;

 private:
  runtime::MetricRegistry registry_;
  std::vector<std::thread> workers_;
};

TEST_F(QueryJobRunnerIT, ACheckpointTakenWhileTheQueryRunsRestoresToWaitForThatSameJob) {
  fake_->jobs().set_options(/*polls_until_done=*/1000000, 0);  // the query runs on
  BigQueryReadOptions options;
  options.query = kQuery;
  options.parent_project = "p";
  options.query_poll_initial = 1ms;
  options.query_poll_max = 5ms;
  connector::ClientOptions client;
  ASSERT_TRUE(client.set_emulator_endpoint(fake_->grpc_endpoint()).ok());
  const BigQueryReadStubFactory stubs = MakeBigQueryReadStubFactory(client);
  BigQueryReadEnumState checkpoint;
  {
    ThreadedCoordinator first;
    ReadSessionEnumerator enumerator(first, stubs, options, admin_);
    ASSERT_TRUE(enumerator.start().ok());
    for (int i = 0; i < 500 && fake_->jobs().jobs_created() == 0; ++i) {
      std::this_thread::sleep_for(2ms);
    }
    ASSERT_EQ(fake_->jobs().jobs_created(), 1) << "no query job after 1 s";
    std::this_thread::sleep_for(20ms);
    std::lock_guard lock(first.mu);
    auto state = enumerator.snapshot_state(1);
    ASSERT_TRUE(state.ok()) << state.status();
    EXPECT_TRUE(state->session.empty()) << "the query is still running";
    EXPECT_THAT(state->query_job, HasSubstr("gcpstream_query_")) << "the running job is kept";
    checkpoint = *state;
    ASSERT_TRUE(enumerator.close().ok());  // the attempt dies here
  }
  // Rows a second query would see; then the first query finishes.
  ASSERT_TRUE(fake_->insert_rows("projects/p/datasets/d/tables/flights", {{{"id", "3"}}}).ok());
  fake_->jobs().set_options(1, 0);
  ThreadedCoordinator second;
  ReadSessionEnumerator restored(second, stubs, options, admin_, checkpoint);
  {
    std::lock_guard lock(second.mu);
    ASSERT_TRUE(restored.start().ok());
  }
  for (int i = 0; i < 1000 && !second.planned; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(second.planned) << "the restored plan did not finish in 5 s";
  std::lock_guard lock(second.mu);
  ASSERT_TRUE(second.failure.ok()) << second.failure;
  EXPECT_EQ(fake_->jobs().jobs_created(), 1) << "the restore ran the query again";
  EXPECT_EQ(second.metric("queryJobsSubmitted"), 0);
  EXPECT_EQ(second.metric("queryJobsReattached"), 1);
  auto state = restored.snapshot_state(2);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_FALSE(state->session.empty());
  EXPECT_EQ(state->query_job, checkpoint.query_job);
  auto rows = fake_->rows(state->read_table);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->size(), 10u) << "the result is the first query's, from before the new row";
}

}  // namespace
}  // namespace gcpstream::bigquery
