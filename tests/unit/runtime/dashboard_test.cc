// The dashboard's model: the plan shown for a job graph, the status tracker, the metric
// sampler's rates and the REST API's documents (docs/dashboard.md). The running server is
// exercised end to end in tests/integration/runtime/dashboard_api_test.cc.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/job_status.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "gcpstream/runtime/web/metric_sampler.h"
#include "gcpstream/runtime/web/rest_api.h"

namespace gcpstream {
namespace {

using nlohmann::json;
using runtime::CheckpointStats;
using runtime::JobPlan;
using runtime::JobState;
using runtime::JobStatusTracker;
using runtime::MetricSample;
using runtime::web::MetricSampler;
using runtime::web::RestApi;

// numbers -> double (chained) -> key_by -> sum (HASH) -> print (chained); plus a second map at
// another parallelism (REBALANCE).
runtime::JobGraph ExampleGraph() {
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  auto doubled = env.from_source(std::make_shared<NumberSequenceSource>(0, 9, 2),
                                 WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
                     .map([](std::int64_t v) { return v * 2; }, "double");
  doubled.key_by([](const std::int64_t& v) { return v % 3; })
      .map([](std::int64_t v) { return v; }, "sum")
      .map([](std::int64_t v) { return v; }, "print");
  return env.graph();
}

TEST(DashboardPlanTest, ChainsAndShipStrategiesFollowTheRuntimesChainingRule) {
  const JobPlan plan = runtime::PlanOf(ExampleGraph(), 2);
  ASSERT_EQ(plan.tasks.size(), 2u);
  EXPECT_EQ(plan.tasks[0].name, "numbers -> double");
  EXPECT_EQ(plan.tasks[1].name, "sum -> print");
  EXPECT_EQ(plan.tasks[1].parallelism, 2);
  ASSERT_EQ(plan.edges.size(), 3u);
  EXPECT_EQ(plan.edges[0].ship_strategy, "FORWARD");
  EXPECT_TRUE(plan.edges[0].chained);
  EXPECT_EQ(plan.edges[1].ship_strategy, "HASH");
  EXPECT_FALSE(plan.edges[1].chained);
  EXPECT_EQ(plan.operators[0].kind, "source");
  EXPECT_EQ(plan.operators[3].task, plan.tasks[1].id);
}

TEST(DashboardPlanTest, AParallelismChangeWithoutPartitioningIsARebalance) {
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  env.from_source(std::make_shared<NumberSequenceSource>(0, 9, 2),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .map([](std::int64_t v) { return v; }, "wide")
      .set_parallelism(3);
  const JobPlan plan = runtime::PlanOf(env.graph(), 2);
  ASSERT_EQ(plan.tasks.size(), 2u);
  EXPECT_EQ(plan.edges[0].ship_strategy, "REBALANCE");
  EXPECT_EQ(plan.tasks[1].parallelism, 3);
}

TEST(JobStatusTrackerTest, CheckpointLifecycleSizesAndBoundedHistory) {
  JobStatusTracker tracker(/*history_size=*/3);
  for (int id = 1; id <= 5; ++id) {
    tracker.checkpoint_triggered(id, false, 1000 * id, 2);
    tracker.checkpoint_state_added(id, 10);
    tracker.checkpoint_acknowledged(id, 100, 4, 1000 * id + 5);
    tracker.checkpoint_acknowledged(id, 50, 9, 1000 * id + 7);
    if (id == 4) {
      tracker.checkpoint_failed(id, 30, absl::DeadlineExceededError("expired"));
    } else {
      tracker.checkpoint_completed(id, 20, "/tmp/chk-" + std::to_string(id));
    }
  }
  tracker.checkpoint_triggered(6, true, 6000, 2);
  const auto s = tracker.snapshot();
  ASSERT_EQ(s.checkpoints.size(), 3u) << "only the last history_size checkpoints are kept";
  EXPECT_EQ(s.checkpoints[0].id, 4);
  EXPECT_EQ(s.checkpoints[0].status, CheckpointStats::Status::kFailed);
  EXPECT_EQ(s.checkpoints[0].failure_message, "DEADLINE_EXCEEDED: expired");
  EXPECT_EQ(s.checkpoints[1].state_size_bytes, 160);
  EXPECT_EQ(s.checkpoints[1].alignment_duration_ms, 9) << "the longest alignment";
  EXPECT_EQ(s.checkpoints[1].num_acknowledged_subtasks, 2);
  EXPECT_EQ(s.checkpoints[1].latest_ack_timestamp_ms, 5007);
  EXPECT_EQ(s.checkpoints[2].status, CheckpointStats::Status::kInProgress);
  EXPECT_TRUE(s.checkpoints[2].is_savepoint);
  EXPECT_EQ(s.completed_checkpoints, 4) << "counts cover every checkpoint, not the history";
  EXPECT_EQ(s.failed_checkpoints, 1);
}

TEST(JobStatusTrackerTest, TheFirstFailureOfEachAttemptIsItsRootCause) {
  JobStatusTracker tracker;
  tracker.set_state(JobState::kRunning, 100);
  tracker.record_exception(0, "map (1/2)", absl::UnavailableError("down"), 200);
  tracker.record_exception(0, "map (2/2)", absl::InternalError("after"), 201);
  tracker.set_state(JobState::kRestarting, 202);
  tracker.set_restarts(1);
  tracker.record_exception(1, "sink (1/1)", absl::DataLossError("gone"), 300);
  tracker.set_state(JobState::kFailed, 301);
  const auto s = tracker.snapshot();
  ASSERT_EQ(s.exceptions.size(), 3u);
  EXPECT_TRUE(s.exceptions[0].root_cause);
  EXPECT_FALSE(s.exceptions[1].root_cause);
  EXPECT_TRUE(s.exceptions[2].root_cause);
  EXPECT_EQ(s.exceptions[2].code, "DATA_LOSS");
  EXPECT_EQ(s.start_time_ms, 100);
  EXPECT_EQ(s.end_time_ms, 301);
  EXPECT_EQ(s.restarts, 1);
}

MetricSample Counter(std::map<std::string, std::string> labels, std::string name, double value) {
  MetricSample m;
  m.labels = std::move(labels);
  m.name = std::move(name);
  m.value = value;
  return m;
}

std::vector<MetricSample> Metrics(double records, double back_pressured_ms, double idle_ms,
                                  double watermark) {
  return {
      Counter({{"job", "j"}, {"operator", "numbers"}, {"subtask", "0"}}, "numRecordsOut", records),
      Counter({{"job", "j"}, {"operator", "double"}, {"subtask", "0"}}, "numRecordsIn", records),
      Counter({{"job", "j"}, {"operator", "double"}, {"subtask", "0"}}, "numRecordsOut", records),
      Counter({{"job", "j"}, {"operator", "sum"}, {"subtask", "0"}}, "numRecordsIn", records / 2),
      Counter({{"job", "j"}, {"operator", "print"}, {"subtask", "0"}}, "numRecordsOut",
              records / 2),
      Counter({{"job", "j"}, {"task", "numbers -> double"}, {"subtask", "0"}},
              "accumulatedBackpressuredTime", back_pressured_ms),
      Counter({{"job", "j"}, {"task", "numbers -> double"}, {"subtask", "0"}},
              "accumulatedIdleTime", idle_ms),
      Counter({{"job", "j"}, {"task", "sum -> print"}, {"subtask", "0"}}, "currentInputWatermark",
              watermark),
  };
}

TEST(MetricSamplerTest, RatesAndRatiosComeFromTheDeltaBetweenSamples) {
  const JobPlan plan = runtime::PlanOf(ExampleGraph(), 1);
  MetricSampler sampler(/*history_size=*/2);
  sampler.sample(Metrics(1000, 100, 0, -9.223372036854775808e18), plan, 10'000);
  EXPECT_TRUE(sampler.history().empty()) << "no rate from a single sample";
  sampler.sample(Metrics(3000, 600, 250, 1234), plan, 12'000);
  const auto tasks = sampler.tasks();
  ASSERT_EQ(tasks.size(), 2u);
  const auto& source = tasks[0].subtasks.at(0);
  EXPECT_EQ(source.records_in, 3000) << "a source task takes in what its source read";
  EXPECT_EQ(source.records_out, 3000);
  EXPECT_DOUBLE_EQ(source.records_out_per_second, 1000);
  EXPECT_DOUBLE_EQ(source.back_pressured_ratio, 0.25);  // 500 ms of 2 s
  EXPECT_DOUBLE_EQ(source.idle_ratio, 0.125);
  const auto& sum = tasks[1].subtasks.at(0);
  EXPECT_EQ(sum.records_in, 1500);
  EXPECT_EQ(sum.watermark, 1234);
  auto history = sampler.history();
  ASSERT_EQ(history.size(), 1u);
  EXPECT_DOUBLE_EQ(history[0].records_in_per_second, 1000);
  EXPECT_DOUBLE_EQ(history[0].back_pressured_ratio.at(tasks[0].task), 0.25);

  // A restart starts the counters again: the rate counts from zero, never negative.
  sampler.sample(Metrics(500, 0, 0, -9.223372036854775808e18), plan, 13'000);
  EXPECT_DOUBLE_EQ(sampler.tasks()[0].subtasks[0].records_out_per_second, 500);
  EXPECT_FALSE(sampler.tasks()[1].subtasks[0].watermark.has_value());
  sampler.sample(Metrics(600, 0, 0, 0), plan, 14'000);
  EXPECT_EQ(sampler.history().size(), 2u) << "the history is bounded";
}

RestApi MakeApi(JobStatusTracker& tracker, MetricSampler& sampler) {
  RestApi::Sources sources;
  sources.job = [&tracker] { return tracker.snapshot(); };
  sources.tasks = [&sampler] { return sampler.tasks(); };
  sources.history = [&sampler] { return sampler.history(); };
  sources.metrics = [] { return Metrics(10, 0, 0, 0); };
  sources.now_ms = [] { return std::int64_t{50'000}; };
  return RestApi(std::move(sources));
}

TEST(RestApiTest, DocumentsFollowFlinksShapes) {
  JobStatusTracker tracker;
  tracker.set_job("flights", "abc123", 2, runtime::PlanOf(ExampleGraph(), 2));
  tracker.set_state(JobState::kRunning, 40'000);
  CheckpointStats restored;
  restored.id = 7;
  restored.external_path = "/ck/abc123/chk-7";
  tracker.set_restored(restored, 40'000);
  tracker.checkpoint_triggered(8, false, 41'000, 4);
  tracker.checkpoint_completed(8, 120, "/ck/abc123/chk-8");
  tracker.checkpoint_triggered(9, false, 42'000, 4);
  tracker.record_exception(0, "sum (1/2)", absl::UnavailableError("no backend"), 43'000);
  MetricSampler sampler;
  sampler.sample(Metrics(0, 0, 0, 0), tracker.snapshot().plan, 44'000);
  sampler.sample(Metrics(100, 0, 0, 0), tracker.snapshot().plan, 45'000);
  RestApi api = MakeApi(tracker, sampler);

  auto overview = json::parse(api.get("/jobs/overview").body);
  EXPECT_EQ(overview["jobs"][0]["jid"], "abc123");
  EXPECT_EQ(overview["jobs"][0]["state"], "RUNNING");
  EXPECT_EQ(overview["jobs"][0]["duration"], 10'000);

  auto details = json::parse(api.get("/jobs/abc123").body);
  ASSERT_EQ(details["vertices"].size(), 2u);
  EXPECT_EQ(details["vertices"][0]["name"], "numbers -> double");
  EXPECT_EQ(details["vertices"][0]["subtasks"].size(), 2u);
  EXPECT_EQ(details["vertices"][0]["backpressure-level"], "ok");
  EXPECT_EQ(details["plan"]["nodes"][1]["inputs"][0]["ship_strategy"], "HASH");

  auto checkpoints = json::parse(api.get("/jobs/abc123/checkpoints").body);
  EXPECT_EQ(checkpoints["counts"]["completed"], 1);
  EXPECT_EQ(checkpoints["counts"]["in_progress"], 1);
  EXPECT_EQ(checkpoints["counts"]["restored"], 1);
  EXPECT_EQ(checkpoints["history"][0]["id"], 9) << "newest first";
  EXPECT_EQ(checkpoints["latest"]["completed"]["id"], 8);
  EXPECT_EQ(checkpoints["latest"]["completed"]["end_to_end_duration"], 120);
  EXPECT_EQ(checkpoints["latest"]["restored"]["id"], 7);
  EXPECT_TRUE(checkpoints["latest"]["failed"].is_null());

  auto exceptions = json::parse(api.get("/jobs/abc123/exceptions").body);
  EXPECT_EQ(exceptions["root-exception"], "UNAVAILABLE: no backend");
  EXPECT_EQ(exceptions["exceptionHistory"]["entries"][0]["taskName"], "sum (1/2)");

  auto bp = json::parse(api.get("/jobs/abc123/vertices/0/backpressure").body);
  EXPECT_EQ(bp["backpressure-level"], "ok");
  EXPECT_EQ(bp["subtasks"].size(), 2u);
  auto wm = json::parse(api.get("/jobs/abc123/vertices/2/watermarks").body);
  EXPECT_EQ(wm[0]["id"], "0.currentInputWatermark");
  auto metrics = json::parse(api.get("/jobs/abc123/metrics").body);
  EXPECT_FALSE(metrics["operators"].empty());
  auto history = json::parse(api.get("/jobs/abc123/history").body);
  EXPECT_EQ(history["samples"].size(), 1u);
  EXPECT_EQ(json::parse(api.get("/config").body)["refresh-interval"], 1000);
}

TEST(RestApiTest, UnknownJobsVerticesAndPathsAnswer404WithAnError) {
  JobStatusTracker tracker;
  tracker.set_job("flights", "abc123", 1, runtime::PlanOf(ExampleGraph(), 1));
  MetricSampler sampler;
  RestApi api = MakeApi(tracker, sampler);
  for (const char* path :
       {"/jobs/other", "/jobs/abc123/nothing", "/jobs/abc123/vertices/99/backpressure",
        "/jobs/abc123/vertices/x/watermarks", "/unknown", "/"}) {
    auto r = api.get(path);
    EXPECT_EQ(r.status, 404) << path;
    auto body = json::parse(r.body);
    EXPECT_TRUE(body["errors"].is_array()) << path << ": " << r.body;
  }
  // Names are data, not markup or JSON structure: a quote in a job name stays a string.
  tracker.set_job("a\"b</script>", "abc123", 1, runtime::PlanOf(ExampleGraph(), 1));
  EXPECT_EQ(json::parse(api.get("/jobs/overview").body)["jobs"][0]["name"], "a\"b</script>");
}

}  // namespace
}  // namespace gcpstream
