// The Cloud Tasks sink end to end: the gcpstream CLI runs a file -> Cloud Tasks pipeline (the
// delayed flights of the vega-datasets file, as examples/pipelines/flights-to-cloud-tasks.yaml
// does) against the in-repo fake service, is killed with SIGKILL twice mid-stream, restored
// each time with --restore, and finishes. With a task id template, every flight is exactly one
// task; without one, every flight is at least one task (a replay creates unnamed tasks again).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/child_process.h"
#include "tests/fakes/cloud_tasks_fake.h"

namespace gcpstream::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr char kQueue[] = "projects/gcpstream-e2e/locations/us-central1/queues/delayed-flights";

class CloudTasksKillTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("gcpstream-tasks-e2e-{}-{}", getpid(), GetParam() ? "named" : "unnamed");
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    testing::CloudTasksFakeOptions options;
    options.create_latency = 20ms;  // 2 writers x 20 in flight / 20 ms: about 2,000 tasks/s
    auto fake = testing::CloudTasksFake::Start(options);
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = std::move(*fake);
    ASSERT_TRUE(fake_->add_queue(kQueue).ok());
    data_ = fs::path(GCPSTREAM_SOURCE_DIR) / ".deps/vega-datasets-3.2.1/data/flights-20k.json";
    ASSERT_TRUE(fs::exists(data_)) << data_ << " (scripts/setup.sh fetches it)";
    pipeline_ = dir_ / "pipeline.yaml";
    std::ofstream(pipeline_) << fmt::format(
        R"(name: flights-to-cloud-tasks-e2e
parallelism: 2
source:
  type: file
  path: {}
  format: json_array
transform:
  keep:
    - field: delay
      op: gt
      value: 0
  ordinal:
    field: seq
  to_cloud_tasks:
    url: https://delays.example.com/flights/{{origin}}
{}sink:
  type: cloud_tasks
  project: gcpstream-e2e
  location: us-central1
  queue: delayed-flights
  emulator_endpoint: {}
  writer_options:
    max_in_flight_tasks: 20
checkpointing:
  interval: 200ms
  dir: {}
failure_handler: fail
)",
        data_.string(), GetParam() ? "    task_id: \"{origin}#{date}#{seq}\"\n" : "",
        fake_->endpoint(), (dir_ / "chk").string());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the CLI until `tasks` more tasks were created, then SIGKILLs it.
  void RunAndKill(bool restore, std::int64_t tasks) {
    std::vector<std::string> args = {GCPSTREAM_CLI_PATH, "run", pipeline_.string()};
    if (restore) args.push_back("--restore");
    const std::int64_t target = fake_->tasks_created() + tasks;
    const pid_t pid = Spawn(args, (dir_ / "job.log").string(), true);
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (fake_->tasks_created() < target && std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      ASSERT_NE(waitpid(pid, &status, WNOHANG), pid)
          << "the job ended before it was killed, after " << fake_->tasks_created() << " tasks:\n"
          << ReadFile(dir_ / "job.log");
      std::this_thread::sleep_for(2ms);
    }
    ASSERT_GE(fake_->tasks_created(), target) << "60 s without reaching " << target << " tasks:\n"
                                              << ReadFile(dir_ / "job.log");
    kill(pid, SIGKILL);
    ASSERT_EQ(WaitFor(pid, 10s), 128 + SIGKILL);
  }

  // The flights the pipeline keeps (delay > 0), as "origin#date#seq" keys.
  std::set<std::string> Expected() {
    std::ifstream in(data_);
    nlohmann::json flights = nlohmann::json::parse(in);
    std::set<std::string> keys;
    for (std::size_t i = 0; i < flights.size(); ++i) {
      const auto& f = flights[i];
      if (f["delay"].get<double>() > 0) {
        keys.insert(fmt::format("{}#{}#{}", f["origin"].get<std::string>(),
                                f["date"].get<std::string>(), i));
      }
    }
    return keys;
  }

  fs::path dir_;
  fs::path data_;
  fs::path pipeline_;
  std::unique_ptr<testing::CloudTasksFake> fake_;
};

TEST_P(CloudTasksKillTest, TwoKillsAndRestoresLoseNoFlight) {
  const bool named = GetParam();
  RunAndKill(false, 1500);
  RunAndKill(true, 1500);
  const pid_t pid = Spawn({GCPSTREAM_CLI_PATH, "run", pipeline_.string(), "--restore"},
                          (dir_ / "job.log").string(), true);
  ASSERT_EQ(WaitFor(pid, 120s), 0) << ReadFile(dir_ / "job.log");

  const std::set<std::string> expected = Expected();
  std::map<std::string, int> per_key;
  std::set<std::string> names;
  const auto tasks = fake_->tasks(kQueue);
  for (const auto& t : tasks) {
    auto f = nlohmann::json::parse(t.http_request().body());
    ++per_key[fmt::format("{}#{}#{}", f["origin"].get<std::string>(), f["date"].get<std::string>(),
                          f["seq"].get<std::int64_t>())];
    names.insert(t.name());
    EXPECT_EQ(t.http_request().url(),
              "https://delays.example.com/flights/" + f["origin"].get<std::string>());
  }
  std::int64_t lost = 0, duplicated = 0;
  for (const auto& k : expected) {
    const int n = per_key.count(k) ? per_key[k] : 0;
    if (n == 0) ++lost;
    if (n > 1) duplicated += n - 1;
  }
  EXPECT_EQ(per_key.size(), expected.size()) << "tasks for keys that are not delayed flights";
  EXPECT_EQ(lost, 0) << "of " << expected.size() << " delayed flights";
  if (named) {
    EXPECT_EQ(duplicated, 0) << "a named task was created twice";
    EXPECT_EQ(tasks.size(), expected.size());
    EXPECT_EQ(names.size(), tasks.size());
    EXPECT_GT(fake_->create_calls(), static_cast<std::int64_t>(tasks.size()))
        << "the restored runs replayed flights the killed ones had sent (answered ALREADY_EXISTS)";
  } else {
    EXPECT_GE(tasks.size(), expected.size());
    RecordProperty("duplicated", static_cast<int>(duplicated));
  }
}

INSTANTIATE_TEST_SUITE_P(TaskIds, CloudTasksKillTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Named") : std::string("Unnamed");
                         });

}  // namespace
}  // namespace gcpstream::e2e
