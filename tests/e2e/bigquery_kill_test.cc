// The BigQuery sink end to end: the gcpstream CLI runs a file -> BigQuery pipeline (all 20,000
// flights of the vega-datasets file, as examples/pipelines/flights-to-bigquery.yaml writes the
// delayed ones) against the in-repo fake, which survives the job: the job is killed with
// SIGKILL at random moments and restored with --restore each time until it finishes.
// STORAGE_API_EXACTLY_ONCE (20 kills): the table holds exactly 20,000 rows, each flight once.
// FILE_LOADS (10 kills; Avro files staged on the fake's Cloud Storage, loaded by load jobs when
// a checkpoint completes): exactly 20,000 rows, each flight once.
// STORAGE_API_AT_LEAST_ONCE (5 kills): every flight at least once.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/child_process.h"
#include "tests/fakes/bigquery/bigquery_fake.h"

namespace gcpstream::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr char kTable[] = "projects/gcpstream-e2e/datasets/flights/tables/all_flights";
constexpr std::int64_t kFlights = 20000;

enum class Method { kExactlyOnce, kAtLeastOnce, kFileLoads };

const char* MethodName(Method m) {
  switch (m) {
    case Method::kExactlyOnce:
      return "STORAGE_API_EXACTLY_ONCE";
    case Method::kFileLoads:
      return "FILE_LOADS";
    case Method::kAtLeastOnce:
      break;
  }
  return "STORAGE_API_AT_LEAST_ONCE";
}

class BigQueryKillTest : public ::testing::TestWithParam<Method> {
 protected:
  void SetUp() override {
    const Method method = GetParam();
    dir_ = fs::temp_directory_path() /
           fmt::format("gcpstream-bigquery-e2e-{}-{}", getpid(), static_cast<int>(method));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    testing::FakeOptions options;
    // 4 KB appends, 40 ms each: an unkilled run takes over ten seconds, so kills land
    // mid-stream.
    options.append_latency = 40ms;
    auto fake = testing::BigQueryFake::Start(options);
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = std::move(*fake);
    ASSERT_TRUE(fake_->add_dataset("gcpstream-e2e", "flights").ok());
    fake_->add_bucket("staging");
    // FILE_LOADS: every upload takes 40 ms and a writer holds at most 8 KB of rows before it
    // finishes its file (the in-flight cap flushes it), so an unkilled run takes seconds.
    fake_->gcs().set_upload_latency(40ms);
    const std::string file_loads = method == Method::kFileLoads ? R"(  file_loads:
    staging_path: gs://staging/e2e
    min_checkpoint_interval: 0s
    load_job_poll_initial_backoff: 20ms
    load_job_poll_max_backoff: 100ms
)"
                                                                : "";
    const fs::path data =
        fs::path(GCPSTREAM_SOURCE_DIR) / ".deps/vega-datasets-3.2.1/data/flights-20k.json";
    ASSERT_TRUE(fs::exists(data)) << data << " (scripts/setup.sh fetches it)";
    pipeline_ = dir_ / "pipeline.yaml";
    std::ofstream(pipeline_) << fmt::format(
        R"(name: flights-to-bigquery-e2e
parallelism: 2
source:
  type: file
  path: {}
  format: json_array
transform:
  ordinal:
    field: seq
sink:
  type: bigquery
  project: gcpstream-e2e
  dataset: flights
  table: all_flights
  write_method: {}
  schema:
    - {{name: seq, type: INT64, mode: REQUIRED}}
    - {{name: date, type: STRING, mode: REQUIRED}}
    - {{name: origin, type: STRING, mode: REQUIRED}}
    - {{name: destination, type: STRING}}
    - {{name: delay, type: INT64}}
    - {{name: distance, type: INT64}}
  emulator_endpoint: {}
  emulator_rest_endpoint: {}
{}  writer_options:
    max_append_request_bytes: 4096
    max_in_flight_bytes: {}
checkpointing:
  interval: 200ms
  dir: {}
failure_handler: fail
)",
        data.string(), MethodName(method), fake_->grpc_endpoint(), fake_->rest_endpoint(),
        file_loads, method == Method::kFileLoads ? 8000 : 64 * 1024 * 1024,
        (dir_ / "chk").string());
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Runs the pipeline to its end, killing it `kills` times at random moments and restoring
  // after each kill. Returns how many kills landed before the job finished.
  int RunWithKills(int kills, std::mt19937& rng) {
    std::uniform_int_distribution<int> delay_ms(250, 1000);
    int landed = 0;
    bool restore = false;
    for (int run = 0; run < 100; ++run) {
      std::vector<std::string> args = {GCPSTREAM_CLI_PATH, "run", pipeline_.string()};
      if (restore) args.push_back("--restore");
      restore = true;
      const pid_t pid = Spawn(args, (dir_ / "job.log").string(), true);
      const bool kill_this = landed < kills;
      const auto until = std::chrono::steady_clock::now() +
                         (kill_this ? std::chrono::milliseconds(delay_ms(rng)) : 300s);
      int status = -1;
      while (std::chrono::steady_clock::now() < until) {
        int raw = 0;
        if (waitpid(pid, &raw, WNOHANG) == pid) {
          status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
          break;
        }
        std::this_thread::sleep_for(5ms);
      }
      if (status == 0) return landed;
      if (status != -1) {
        ADD_FAILURE() << "a run failed by itself (exit " << status << ") after "
                      << fake_->rows_appended() << " appended rows:\n"
                      << ReadFile(dir_ / "job.log");
        return landed;
      }
      kill(pid, SIGKILL);
      EXPECT_EQ(WaitFor(pid, 10s), 128 + SIGKILL);
      if (!kill_this) {
        ADD_FAILURE() << "the last run did not finish in 300 s:\n" << ReadFile(dir_ / "job.log");
        return landed;
      }
      ++landed;
    }
    ADD_FAILURE() << "100 runs without finishing";
    return landed;
  }

  fs::path dir_;
  fs::path pipeline_;
  std::unique_ptr<testing::BigQueryFake> fake_;
};

TEST_P(BigQueryKillTest, KilledAndRestoredRunsWriteEveryFlight) {
  const Method method = GetParam();
  const bool exactly_once = method != Method::kAtLeastOnce;
  const unsigned seed = static_cast<unsigned>(std::random_device()());
  std::printf("random seed %u\n", seed);
  std::fflush(stdout);  // a forked child would flush an inherited copy of the buffer again
  std::mt19937 rng(seed);
  const int kills = method == Method::kExactlyOnce ? 20 : method == Method::kFileLoads ? 10 : 5;
  const int landed = RunWithKills(kills, rng);
  if (HasFailure()) return;
  auto rows = fake_->rows(kTable);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::map<std::int64_t, int> per_seq;
  for (const auto& r : *rows) ++per_seq[std::stoll(r["seq"].get<std::string>())];
  std::int64_t lost = 0, duplicated = 0;
  for (std::int64_t seq = 0; seq < kFlights; ++seq) {
    auto it = per_seq.find(seq);
    if (it == per_seq.end()) {
      ++lost;
    } else if (it->second > 1) {
      duplicated += it->second - 1;
    }
  }
  std::printf(
      "%s: %d kills landed; %zu rows, %lld appended or loaded in all, %lld streams created, "
      "%d load jobs, %lld staged objects left\n",
      MethodName(method), landed, rows->size(), static_cast<long long>(fake_->rows_appended()),
      static_cast<long long>(fake_->streams_created()), fake_->jobs().jobs_created(),
      static_cast<long long>(fake_->gcs().object_count()));
  std::fflush(stdout);
  EXPECT_GE(landed, method == Method::kAtLeastOnce ? 3 : 10)
      << "the job finished before enough kills landed";
  EXPECT_EQ(per_seq.size(), static_cast<std::size_t>(kFlights)) << "rows for unknown flights";
  EXPECT_EQ(lost, 0);
  if (exactly_once) {
    EXPECT_EQ(duplicated, 0);
    EXPECT_EQ(rows->size(), static_cast<std::size_t>(kFlights));
    if (method == Method::kExactlyOnce) {
      EXPECT_GT(fake_->rows_appended(), kFlights)
          << "the kills left appended rows no checkpoint committed (they must stay invisible)";
    } else {
      EXPECT_GT(fake_->jobs().jobs_created(), 1) << "one load per checkpoint, not one in all";
    }
  } else {
    EXPECT_GE(rows->size(), static_cast<std::size_t>(kFlights));
  }
}

INSTANTIATE_TEST_SUITE_P(WriteMethods, BigQueryKillTest,
                         ::testing::Values(Method::kExactlyOnce, Method::kAtLeastOnce,
                                           Method::kFileLoads),
                         [](const ::testing::TestParamInfo<Method>& info) {
                           switch (info.param) {
                             case Method::kExactlyOnce:
                               return std::string("ExactlyOnce");
                             case Method::kFileLoads:
                               return std::string("FileLoads");
                             case Method::kAtLeastOnce:
                               break;
                           }
                           return std::string("AtLeastOnce");
                         });

}  // namespace
}  // namespace gcpstream::e2e
