// The dashboard's REST API served by a running job (docs/dashboard.md): the documented shapes,
// checkpoints appearing as they complete, a restart and its exception, the restore point, and
// the page's static files. In-process jobs; no emulator needed.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/job_runner.h"
#include "gcpstream/runtime/stream_execution_environment.h"

namespace gcpstream {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

// A job runner on a thread of its own, cancelled and joined when the test ends.
class BackgroundJob {
 public:
  explicit BackgroundJob(std::unique_ptr<runtime::JobRunner> runner)
      : runner_(std::move(runner)), thread_([this] { result_ = runner_->run(); }) {}
  ~BackgroundJob() {
    runner_->cancel();
    thread_.join();
  }
  runtime::JobRunner& runner() { return *runner_; }

 private:
  std::unique_ptr<runtime::JobRunner> runner_;
  runtime::JobResult result_;
  std::thread thread_;
};

// Polls `probe` until it returns true; fails naming what the last probe saw.
void WaitUntil(const std::string& what, std::chrono::milliseconds timeout,
               const std::function<bool(std::string& seen)>& probe) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string seen;
  while (std::chrono::steady_clock::now() < deadline) {
    if (probe(seen)) return;
    std::this_thread::sleep_for(50ms);
  }
  FAIL() << "timed out after " << timeout.count() << " ms waiting for " << what
         << "; last seen: " << seen;
}

int WaitForPort(runtime::JobRunner& runner) {
  int port = 0;
  WaitUntil("the dashboard to listen", 20s, [&](std::string& seen) {
    port = runner.ui_port();
    seen = "port " + std::to_string(port);
    return port > 0;
  });
  return port;
}

struct Http {
  explicit Http(int port) : client("127.0.0.1", port) {
    client.set_connection_timeout(5);
    client.set_read_timeout(5);
  }
  // The document at `path`, or a JSON null with the failure in `error`.
  json get(const std::string& path, int expected_status = 200) {
    auto res = client.Get(path);
    if (!res) {
      ADD_FAILURE() << "GET " << path << " failed: " << httplib::to_string(res.error());
      return nullptr;
    }
    EXPECT_EQ(res->status, expected_status) << "GET " << path << ": " << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json") << path;
    return json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  }
  httplib::Client client;
};

std::int64_t Slow(std::int64_t v) {
  if (v % 50 == 0) std::this_thread::sleep_for(1ms);
  return v;
}

std::atomic<bool> g_failed_once{false};

std::int64_t FailOnce(std::int64_t v) {
  if (v == 3000 && !g_failed_once.exchange(true)) throw std::runtime_error("injected failure");
  return v;
}

StreamExecutionEnvironment SlowJob(const std::string& checkpoint_dir) {
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  env.enable_checkpointing(100ms);
  env.config().checkpointing.directory = checkpoint_dir;
  env.config().ui_port = 0;
  env.config().restart_strategy.kind = runtime::RestartStrategyKind::kFixedDelay;
  env.config().restart_strategy.max_attempts = 3;
  env.config().restart_strategy.delay = 300ms;
  env.from_source(
         std::make_shared<NumberSequenceSource>(0, 50'000'000, 4),
         WatermarkStrategy<std::int64_t>::for_monotonous_timestamps()
             .with_timestamp_assigner([](const std::int64_t& v, std::int64_t) { return v; })
             .with_watermark_alignment("numbers", std::chrono::hours(1), 200ms),
         "numbers")
      .map(Slow, "slow")
      .map(FailOnce, "fail-once")
      .key_by([](const std::int64_t& v) { return v % 7; })
      .map([](std::int64_t v) { return v; }, "keyed");
  return env;
}

std::string TempDir(const std::string& name) {
  auto dir = fs::temp_directory_path() /
             ("gcpstream-dashboard-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

TEST(DashboardApiTest, ARunningJobAnswersWithTheDocumentedShapes) {
  g_failed_once = false;
  BackgroundJob job(SlowJob(TempDir("shapes")).create_runner("dashboard-shapes"));
  Http http(WaitForPort(job.runner()));
  const std::string jid = job.runner().job_id();

  json overview;
  WaitUntil("the job to run", 20s, [&](std::string& seen) {
    overview = http.get("/jobs/overview");
    seen = overview.dump();
    return overview["jobs"][0]["state"] == "RUNNING";
  });
  EXPECT_EQ(overview["jobs"][0]["jid"], jid);
  EXPECT_EQ(overview["jobs"][0]["name"], "dashboard-shapes");
  EXPECT_EQ(overview["jobs"][0]["parallelism"], 2);
  EXPECT_GT(overview["jobs"][0]["start-time"].get<std::int64_t>(), 0);

  const json plan = http.get("/jobs/" + jid + "/plan")["plan"];
  ASSERT_EQ(plan["nodes"].size(), 2u) << plan.dump();
  EXPECT_EQ(plan["nodes"][0]["description"], "numbers -> slow -> fail-once");
  EXPECT_EQ(plan["nodes"][1]["description"], "keyed");
  EXPECT_EQ(plan["nodes"][1]["inputs"][0]["ship_strategy"], "HASH");
  EXPECT_EQ(plan["nodes"][1]["inputs"][0]["id"], plan["nodes"][0]["id"]);

  // Checkpoints appear as they complete, with what they cost.
  json checkpoints;
  WaitUntil("a completed checkpoint", 30s, [&](std::string& seen) {
    checkpoints = http.get("/jobs/" + jid + "/checkpoints");
    seen = checkpoints["counts"].dump();
    return checkpoints["counts"]["completed"].get<int>() >= 1;
  });
  const json latest = checkpoints["latest"]["completed"];
  EXPECT_EQ(latest["status"], "COMPLETED");
  EXPECT_EQ(latest["num_subtasks"], 4);
  EXPECT_EQ(latest["num_acknowledged_subtasks"], 4);
  EXPECT_GT(latest["state_size"].get<std::int64_t>(), 0) << "split state is checkpointed";
  EXPECT_GE(latest["end_to_end_duration"].get<std::int64_t>(), 0);
  EXPECT_GE(latest["trigger_timestamp"].get<std::int64_t>(),
            overview["jobs"][0]["start-time"].get<std::int64_t>());
  EXPECT_TRUE(latest["external_path"].get<std::string>().find("chk-") != std::string::npos);
  EXPECT_TRUE(checkpoints["latest"]["restored"].is_null());

  // The injected failure restarts the job: the restart count and the exception show up, and
  // checkpoints go on after it.
  json details;
  WaitUntil("the restart", 30s, [&](std::string& seen) {
    details = http.get("/jobs/" + jid);
    seen = details["state"].dump() + " restarts " + details["restarts"].dump();
    return details["restarts"].get<int>() >= 1 && details["state"] == "RUNNING";
  });
  const json exceptions = http.get("/jobs/" + jid + "/exceptions");
  ASSERT_FALSE(exceptions["exceptionHistory"]["entries"].empty()) << exceptions.dump();
  const json root = exceptions["exceptionHistory"]["entries"].back();
  EXPECT_EQ(root["attempt"], 0);
  EXPECT_EQ(root["exceptionName"], "UNKNOWN");
  EXPECT_NE(root["stacktrace"].get<std::string>().find("injected failure"), std::string::npos);
  EXPECT_NE(root["taskName"].get<std::string>().find("fail-once"), std::string::npos);
  EXPECT_TRUE(root["rootCause"].get<bool>());
  const std::int64_t before = http.get("/jobs/" + jid + "/checkpoints")["counts"]["completed"];
  WaitUntil("a checkpoint after the restart", 30s, [&](std::string& seen) {
    const json c = http.get("/jobs/" + jid + "/checkpoints");
    seen = c["counts"].dump();
    return c["counts"]["completed"].get<std::int64_t>() > before;
  });

  // Per-subtask records, rates and back pressure.
  WaitUntil("records counted in the keyed task", 20s, [&](std::string& seen) {
    details = http.get("/jobs/" + jid);
    seen = details["vertices"].dump();
    return details["vertices"][1]["metrics"]["read-records"].get<std::int64_t>() > 0;
  });
  for (const auto& vertex : details["vertices"]) {
    EXPECT_EQ(vertex["subtasks"].size(), 2u);
    for (const auto& s : vertex["subtasks"]) {
      for (const char* ratio : {"backpressure-ratio", "idle-ratio", "busy-ratio"}) {
        EXPECT_GE(s[ratio].get<double>(), 0.0) << ratio;
        EXPECT_LE(s[ratio].get<double>(), 1.0) << ratio;
      }
    }
  }
  const std::string keyed = details["vertices"][1]["id"].dump();
  const json bp = http.get("/jobs/" + jid + "/vertices/" + keyed + "/backpressure");
  EXPECT_EQ(bp["status"], "ok");
  EXPECT_EQ(bp["subtasks"].size(), 2u);
  EXPECT_TRUE(bp["backpressure-level"] == "ok" || bp["backpressure-level"] == "low" ||
              bp["backpressure-level"] == "high");
  WaitUntil("a watermark at the keyed task", 20s, [&](std::string& seen) {
    const json wm = http.get("/jobs/" + jid + "/watermarks");
    seen = wm.dump();
    for (const auto& s : wm["subtasks"]) {
      if (s["task"] == "keyed" && s["watermark"].is_number()) return true;
    }
    return false;
  });
  WaitUntil("the alignment group's state", 20s, [&](std::string& seen) {
    const json wm = http.get("/jobs/" + jid + "/watermarks");
    seen = wm["alignment"].dump();
    return !wm["alignment"].empty() && wm["alignment"][0]["group"] == "numbers" &&
           wm["alignment"][0]["max-drift"] == 3'600'000 && !wm["alignment"][0]["readers"].empty();
  });
  const json metrics = http.get("/jobs/" + jid + "/metrics");
  bool saw_records_in = false;
  for (const auto& op : metrics["operators"]) {
    for (const auto& m : op["metrics"]) saw_records_in |= m["id"] == "numRecordsIn";
  }
  EXPECT_TRUE(saw_records_in) << metrics.dump();
  WaitUntil("throughput history", 20s, [&](std::string& seen) {
    const json h = http.get("/jobs/" + jid + "/history");
    seen = h.dump();
    return h["samples"].size() >= 2 &&
           h["samples"].back()["records-in-per-second"].get<double>() > 0;
  });

  EXPECT_TRUE(http.get("/jobs/not-this-job", 404)["errors"].is_array());
}

TEST(DashboardApiTest, TheRestorePointIsShown) {
  g_failed_once = true;  // no injected failure in this test
  const std::string dir = TempDir("restore");
  std::int64_t checkpoint_id = 0;
  {
    BackgroundJob first(SlowJob(dir).create_runner("dashboard-restore"));
    WaitUntil("a completed checkpoint of the first run", 30s, [&](std::string& seen) {
      auto cp = first.runner().latest_checkpoint();
      seen = cp ? std::to_string(cp->id) : "none";
      if (cp) checkpoint_id = cp->id;
      return cp != nullptr;
    });
  }
  auto env = SlowJob(dir);
  env.config().restore_from = dir;
  BackgroundJob second(env.create_runner("dashboard-restore"));
  Http http(WaitForPort(second.runner()));
  const json c = http.get("/jobs/" + second.runner().job_id() + "/checkpoints");
  EXPECT_EQ(c["counts"]["restored"], 1);
  ASSERT_TRUE(c["latest"]["restored"].is_object()) << c.dump();
  EXPECT_GE(c["latest"]["restored"]["id"].get<std::int64_t>(), checkpoint_id);
  EXPECT_FALSE(c["latest"]["restored"]["is_savepoint"].get<bool>());
}

TEST(DashboardApiTest, ThePageAndOnlyItsOwnFilesAreServed) {
  g_failed_once = true;
  BackgroundJob job(SlowJob(TempDir("page")).create_runner("dashboard-page"));
  Http http(WaitForPort(job.runner()));
  auto page = http.client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("/static/app.js"), std::string::npos);
  for (const char* file : {"/static/app.js", "/static/app.css", "/static/uPlot.iife.min.js",
                           "/static/cytoscape.min.js", "/static/cytoscape-dagre.js"}) {
    auto res = http.client.Get(file);
    ASSERT_TRUE(res) << file;
    EXPECT_EQ(res->status, 200) << file;
    EXPECT_GT(res->body.size(), 100u) << file;
  }
  for (const char* path : {"/static/..%2F..%2Fetc%2Fpasswd", "/static/../CMakeCache.txt",
                           "/static/.hidden", "/static/missing.js", "/etc/passwd"}) {
    auto res = http.client.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path << ": " << res->body.substr(0, 200);
  }
  auto post = http.client.Post("/jobs/overview", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_NE(post->status, 200) << "the API is read-only";
}

}  // namespace
}  // namespace gcpstream
