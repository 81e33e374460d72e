// The Bigtable change-stream source end to end: the gcpstream CLI replicates the change stream
// of a table served by the change-stream fake (a separate process, splitting and merging its
// partitions every two seconds) into a table of the Bigtable emulator, one row per mutation.
// The job is killed with SIGKILL three times at random moments after a checkpoint, mutations are
// written while it is down, and it is restored with --restore each time. Every mutation written
// — before, during and after the outages — must reach the emulator (at least once; a repeat
// rewrites the same row).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/child_process.h"
#include "tests/support/bigtable_emulator.h"
#include "tests/support/emulators.h"

namespace gcpstream::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr char kPipeline[] = R"(name: bigtable-changes-e2e
parallelism: 2
source:
  type: bigtable_change_stream
  project: e2e
  instance: source
  table: orders
  app_profile_id: cdc
  start_position: -1m
  max_concurrent_streams_per_subtask: 1
  emulator_endpoint: ${FAKE_ENDPOINT}
transform:
  to_bigtable:
    row_key: "{_row_key}@{_commit_timestamp}"
    family: f
    columns:
      entries: _entries
sink:
  type: bigtable
  project: e2e
  instance: replica
  table: ${REPLICA_TABLE}
  emulator_endpoint: ${BIGTABLE_EMULATOR_HOST}
  create_disposition: CREATE_IF_NEEDED
  table_create_options:
    column_families:
      f:
        max_versions: 1
failure_handler: fail
)";

class BigtableChangeStreamKillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("gcpstream-bigtable-cs-e2e-{}", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fake_ = Spawn({BIGTABLE_CHANGE_STREAMS_FAKE_PATH, "--port", "0", "--table",
                   "projects/e2e/instances/source/tables/orders", "--split-every-s", "2"},
                  (dir_ / "fake.log").string(), true);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (endpoint_.empty() && std::chrono::steady_clock::now() < deadline) {
      const std::string log = ReadFile(dir_ / "fake.log");
      const auto at = log.find("listening on ");
      const auto eol = log.find('\n', at);
      if (at != std::string::npos && eol != std::string::npos) {
        endpoint_ = log.substr(at + 13, eol - at - 13);
      }
      std::this_thread::sleep_for(20ms);
    }
    ASSERT_FALSE(endpoint_.empty()) << ReadFile(dir_ / "fake.log");
    source_ = std::make_unique<testing::BigtableEmulatorClient>(endpoint_);
    replica_endpoint_ = testing::EmulatorEndpoint(testing::Emulator::kBigtable);
    replica_ = std::make_unique<testing::BigtableEmulatorClient>(replica_endpoint_);
    table_ = testing::UniqueId("replica");
    std::ofstream(dir_ / "pipeline.yaml") << kPipeline;
    setenv("FAKE_ENDPOINT", endpoint_.c_str(), 1);
    setenv("REPLICA_TABLE", table_.c_str(), 1);
    setenv("BIGTABLE_EMULATOR_HOST", replica_endpoint_.c_str(), 1);
  }
  void TearDown() override {
    if (fake_ > 0) {
      kill(fake_, SIGTERM);
      WaitFor(fake_, 10s);
    }
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Mutations n = from..to-1 on rows "a-row".."z-row" (one each), the value being n.
  void Write(int from, int to) {
    for (int n = from; n < to; ++n) {
      google::bigtable::v2::MutateRowRequest request;
      request.set_table_name("projects/e2e/instances/source/tables/orders");
      request.set_row_key(std::string(1, static_cast<char>('a' + n % 26)) + "-row");
      auto* cell = request.add_mutations()->mutable_set_cell();
      cell->set_family_name("f");
      cell->set_column_qualifier("n");
      cell->set_timestamp_micros(-1);
      cell->set_value(std::to_string(n));
      ASSERT_TRUE(source_->mutate_row(request).ok());
      if (n % 50 == 49) std::this_thread::sleep_for(20ms);
    }
  }

  std::vector<std::string> Args(bool restore) {
    std::vector<std::string> args = {GCPSTREAM_CLI_PATH,
                                     "run",
                                     (dir_ / "pipeline.yaml").string(),
                                     "--checkpoint-dir",
                                     (dir_ / "chk").string(),
                                     "--checkpoint-interval",
                                     "300ms"};
    if (restore) args.push_back("--restore");
    return args;
  }

  // The mutation numbers the replica holds.
  std::set<int> Replicated() {
    std::set<int> out;
    auto rows = replica_->read_rows("projects/e2e/instances/replica/tables/" + table_);
    if (!rows.ok()) return out;
    for (const auto& [key, cells] : *rows) {
      for (const auto& c : cells) {
        if (c.qualifier != "entries") continue;
        auto entries = nlohmann::json::parse(c.value, nullptr, false);
        if (!entries.is_array()) continue;
        for (const auto& e : entries) {
          if (e.value("qualifier", "") == "n") out.insert(std::stoi(e.value("value", "-1")));
        }
      }
    }
    return out;
  }

  void AwaitReplicated(int n, std::chrono::seconds timeout, pid_t pid) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int missing = 0, first = -1;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto got = Replicated();
      missing = 0;
      first = -1;
      for (int i = 0; i < n; ++i) {
        if (got.count(i) == 0) {
          if (first < 0) first = i;
          ++missing;
        }
      }
      if (missing == 0) return;
      int status = 0;
      ASSERT_NE(waitpid(pid, &status, WNOHANG), pid) << "the job ended";
      std::this_thread::sleep_for(200ms);
    }
    FAIL() << missing << " of " << n << " mutations never reached the replica (first: " << first
           << ")";
  }

  fs::path dir_;
  pid_t fake_ = -1;
  std::string endpoint_;
  std::string replica_endpoint_;
  std::string table_;
  std::unique_ptr<testing::BigtableEmulatorClient> source_;
  std::unique_ptr<testing::BigtableEmulatorClient> replica_;
};

TEST_F(BigtableChangeStreamKillTest, NoMutationIsLostAcrossThreeKillsAndRestores) {
  std::mt19937 random(static_cast<unsigned>(getpid()));
  pid_t pid = Spawn(Args(false), (dir_ / "job-0.log").string(), true);
  int written = 0;
  for (int round = 0; round < 3; ++round) {
    Write(written, written + 300);
    written += 300;
    AwaitReplicated(written, 60s, pid);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!HasCompletedCheckpoint(dir_ / "chk") && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(50ms);
    }
    ASSERT_TRUE(HasCompletedCheckpoint(dir_ / "chk"))
        << ReadFile(dir_ / fmt::format("job-{}.log", round));
    // Mutations in flight at the kill, at a random moment, then more while nothing reads.
    std::thread writer([&, from = written] { Write(from, from + 200); });
    std::this_thread::sleep_for(std::chrono::milliseconds(random() % 400));
    kill(pid, SIGKILL);
    writer.join();
    written += 200;
    ASSERT_EQ(WaitFor(pid, 10s), 128 + SIGKILL);
    Write(written, written + 100);
    written += 100;
    pid = Spawn(Args(true), (dir_ / fmt::format("job-{}.log", round + 1)).string(), true);
  }
  Write(written, written + 100);
  written += 100;
  AwaitReplicated(written, 90s, pid);
  kill(pid, SIGTERM);
  ASSERT_EQ(WaitFor(pid, 30s), 0) << ReadFile(dir_ / "job-3.log");
  // The last run resumed from its checkpoint: it read far fewer than the mutations written since
  // the start position (a run from scratch would read them all).
  const std::string log = ReadFile(dir_ / "job-3.log");
  const auto at = log.find("records    in ");
  ASSERT_NE(at, std::string::npos) << log;
  const long read = std::stol(log.substr(at + 13));
  EXPECT_LT(read, written - 300) << log;
  std::printf("%d mutations replicated across three kills; the last run read %ld\n", written,
              read);
}

}  // namespace
}  // namespace gcpstream::e2e
