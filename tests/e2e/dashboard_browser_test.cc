// The dashboard in a real browser (Debian's chromium, headless): the flights pipeline runs
// through the CLI with --ui-port, and the page it serves is loaded once it completed a
// checkpoint. The page must draw the job graph, list the checkpoint, and meet no error (the
// page records every error it sees; chromium's console log must stay empty). A screenshot is
// kept in <build>/test-artifacts/dashboard.png for people to look at.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "tests/e2e/child_process.h"
#include "tests/integration/pipeline/flights_data.h"
#include "tests/support/emulators.h"
#include "tests/support/pubsub_emulator.h"

namespace gcpstream {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using e2e::Spawn;
using e2e::WaitFor;
using nlohmann::json;

constexpr char kChromium[] = "/usr/bin/chromium";
constexpr char kProject[] = "dashboard-e2e";

// Runs `command` through the shell; its exit code.
int Shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

class DashboardBrowserE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kChromium))
        << kChromium << " is missing: scripts/setup.sh installs Debian's chromium";
    const std::string pubsub = testing::EmulatorEndpoint(testing::Emulator::kPubSub);
    const std::string bigtable = testing::EmulatorEndpoint(testing::Emulator::kBigtable);
    ASSERT_FALSE(pubsub.empty());
    ASSERT_FALSE(bigtable.empty());
    topic_ = testing::UniqueId("dashboard-flights");
    testing::PubSubEmulatorClient client(pubsub);
    ASSERT_TRUE(testing::CreateTopicAndSubscription(client, kProject, topic_, topic_ + "-sub",
                                                    /*ordering=*/false)
                    .ok());
    dir_ = testing::WriteFlightsFolder("dashboard-e2e", testing::Flights(3000));
    setenv("FLIGHTS_FILE", (dir_ / "flights.json").c_str(), 1);
    setenv("FLIGHTS_TOPIC", topic_.c_str(), 1);
    setenv("FLIGHTS_SUBSCRIPTION", (topic_ + "-sub").c_str(), 1);
    setenv("FLIGHTS_TABLE", testing::UniqueId("flights").c_str(), 1);
    setenv("GCP_PROJECT", kProject, 1);
    setenv("BIGTABLE_INSTANCE", "dashboard", 1);
    setenv("PUBSUB_EMULATOR_HOST", pubsub.c_str(), 1);
    setenv("BIGTABLE_EMULATOR_HOST", bigtable.c_str(), 1);
    setenv("CHECKPOINT_DIR", (dir_ / "checkpoints").c_str(), 1);
  }
  void TearDown() override {
    if (job_ > 0) {
      kill(job_, SIGKILL);
      WaitFor(job_, 10s);
    }
    fs::remove_all(dir_);
  }

  pid_t job_ = -1;
  std::string topic_;
  fs::path dir_;
};

TEST_F(DashboardBrowserE2E, ThePageShowsTheRunningFlightsPipeline) {
  const std::string source = GCPSTREAM_SOURCE_DIR;
  // Pipeline 1 fills the topic, so pipeline 2 has flights to move while the page is open.
  const pid_t publisher =
      Spawn({GCPSTREAM_CLI_PATH, "run", source + "/examples/pipelines/flights-to-pubsub.yaml"},
            (dir_ / "pipeline1.log").string(), true);
  ASSERT_EQ(WaitFor(publisher, 120s), 0) << e2e::ReadFile(dir_ / "pipeline1.log");

  const fs::path log = dir_ / "pipeline2.log";
  job_ = Spawn({GCPSTREAM_CLI_PATH, "run",
                source + "/examples/pipelines/flights-pubsub-to-bigtable.yaml", "--ui-port", "0"},
               log.string(), true);
  // The CLI logs where the dashboard listens.
  int port = 0;
  const std::regex url(R"(dashboard at http://127\.0\.0\.1:(\d+)/)");
  for (auto deadline = std::chrono::steady_clock::now() + 60s;
       port == 0 && std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(100ms)) {
    std::smatch m;
    const std::string text = e2e::ReadFile(log);
    if (std::regex_search(text, m, url)) port = std::stoi(m[1].str());
  }
  ASSERT_GT(port, 0) << "no dashboard URL in the job's log:\n" << e2e::ReadFile(log);

  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(5);
  std::string jid;
  json plan;
  std::string seen;
  for (auto deadline = std::chrono::steady_clock::now() + 90s;
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(200ms)) {
    auto overview = http.Get("/jobs/overview");
    if (!overview || overview->status != 200) continue;
    jid = json::parse(overview->body)["jobs"][0]["jid"];
    auto checkpoints = http.Get("/jobs/" + jid + "/checkpoints");
    if (!checkpoints) continue;
    seen = checkpoints->body.substr(0, 300);
    if (json::parse(checkpoints->body)["counts"]["completed"].get<int>() >= 1) {
      plan = json::parse(http.Get("/jobs/" + jid + "/plan")->body)["plan"];
      break;
    }
  }
  ASSERT_FALSE(plan.is_null()) << "no completed checkpoint within 90 s; last: " << seen
                               << "\njob log:\n"
                               << e2e::ReadFile(log);

  const std::string page = fmt::format("http://127.0.0.1:{}/", port);
  const std::string browser = fmt::format(
      "timeout 120 {} --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
      "--user-data-dir={} --enable-logging=stderr --v=0 --virtual-time-budget=6000 ",
      kChromium, Quote((dir_ / "chromium").string()));
  const fs::path dom = dir_ / "dom.html";
  const fs::path console = dir_ / "chromium.log";
  ASSERT_EQ(Shell(browser + "--dump-dom " + page + " > " + Quote(dom.string()) + " 2> " +
                  Quote(console.string())),
            0)
      << e2e::ReadFile(console);
  const std::string html = e2e::ReadFile(dom);

  std::smatch m;
  ASSERT_TRUE(std::regex_search(html, m, std::regex(R"re(data-graph-nodes="(\d+)")re")))
      << html.substr(0, 2000);
  EXPECT_EQ(std::stoul(m[1].str()), plan["nodes"].size()) << "every task of the plan is drawn";
  ASSERT_TRUE(std::regex_search(html, m, std::regex(R"re(data-completed-checkpoints="(\d+)")re")));
  EXPECT_GE(std::stoi(m[1].str()), 1);
  EXPECT_NE(html.find("status-COMPLETED"), std::string::npos) << "a completed checkpoint row";
  EXPECT_NE(html.find("flights-pubsub-to-bigtable"), std::string::npos);
  EXPECT_NE(html.find("data-state=\"RUNNING\""), std::string::npos);
  EXPECT_EQ(html.find("data-errors="), std::string::npos) << "the page recorded errors:\n" << html;
  std::string console_text = e2e::ReadFile(console);
  EXPECT_EQ(console_text.find(":CONSOLE"), std::string::npos)
      << "the page wrote to the console:\n" << console_text;

  const fs::path artifacts = fs::path(GCPSTREAM_BINARY_DIR) / "test-artifacts";
  fs::create_directories(artifacts);
  const fs::path shot = artifacts / "dashboard.png";
  fs::remove(shot);
  ASSERT_EQ(Shell(browser + "--window-size=1400,2000 --screenshot=" + Quote(shot.string()) + " " +
                  page + " 2> " + Quote((dir_ / "screenshot.log").string())),
            0)
      << e2e::ReadFile(dir_ / "screenshot.log");
  ASSERT_TRUE(fs::exists(shot));
  EXPECT_GT(fs::file_size(shot), 20'000u) << "a screenshot of a drawn page, not a blank one";

  // SIGTERM: the job stops with a savepoint and exits 0, the page's job with it.
  kill(job_, SIGTERM);
  EXPECT_EQ(WaitFor(job_, 60s), 0) << e2e::ReadFile(log);
  job_ = -1;
}

}  // namespace
}  // namespace gcpstream
