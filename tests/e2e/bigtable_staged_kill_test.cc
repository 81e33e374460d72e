// Exactly-once Bigtable writes end to end: the gcpstream CLI runs
// examples/pipelines/flights-delay-counters.yaml (per-origin AddToCell counters of the delayed
// flights of the 20,000-flight file, through the staged mode) against the Bigtable emulator
// behind the fault proxy, is killed with SIGKILL 20 times at random moments and restored with
// --restore each time; a few CheckAndMutateRow calls are applied and then answered INTERNAL
// (an ambiguous failure the commit does not retry), which fails the run, restored the same way.
// Every counter must end exactly equal to its sum over the file. The control: the
// at-least-once sink (delivery_guarantee AT_LEAST_ONCE, MutateRows) killed once adds have landed
// and before any checkpoint over-counts, because an AddToCell replayed after the restart adds
// again, which a stable timestamp cannot prevent.
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
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gcpstream/bigtable/admin/table_create_options.h"
#include "tests/e2e/child_process.h"
#include "tests/fakes/fault_proxy.h"
#include "tests/support/bigtable_emulator.h"
#include "tests/support/emulators.h"

namespace gcpstream::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr char kProject[] = "gcpstream-e2e";
constexpr char kInstance[] = "delays";
constexpr int kKills = 20;

struct Counters {
  std::int64_t delayed = 0;
  std::int64_t minutes = 0;
  friend bool operator==(const Counters&, const Counters&) = default;
};

class BigtableStagedKillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("gcpstream-staged-e2e-{}", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    emulator_ = testing::EmulatorEndpoint(testing::Emulator::kBigtable);
    ASSERT_FALSE(emulator_.empty());
    auto proxy = testing::FaultProxy::start(emulator_);
    ASSERT_TRUE(proxy.ok()) << proxy.status();
    proxy_ = std::move(*proxy);
    data_ = fs::path(GCPSTREAM_SOURCE_DIR) / ".deps/vega-datasets-3.2.1/data/flights-20k.json";
    ASSERT_TRUE(fs::exists(data_)) << data_ << " (scripts/setup.sh fetches it)";
    std::ifstream in(data_);
    for (const auto& f : nlohmann::json::parse(in)) {
      const std::int64_t delay = f.at("delay").get<std::int64_t>();
      if (delay <= 0) continue;
      auto& c = expected_[f.at("origin").get<std::string>()];
      c.delayed += 1;
      c.minutes += delay;
    }
    setenv("FLIGHTS_FILE", data_.c_str(), 1);
    setenv("GCP_PROJECT", kProject, 1);
    setenv("BIGTABLE_INSTANCE", kInstance, 1);
    setenv("BIGTABLE_EMULATOR_HOST", proxy_->endpoint().c_str(), 1);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // The table as the example's comment provisions it: an INT64 Sum family and a raw marker
  // family without a GC rule.
  std::string CreateTable() {
    const std::string table = testing::UniqueId("delays");
    bigtable::TableCreateOptions o;
    o.column_family("counters", std::nullopt, bigtable::ColumnFamilyType::kInt64Sum);
    testing::BigtableEmulatorClient client(emulator_);
    EXPECT_TRUE(client
                    .create_table(testing::BigtableTableName(kProject, kInstance, table),
                                  {{"counters", o.family_proto("counters")},
                                   {"flink_commit", google::bigtable::admin::v2::ColumnFamily()}})
                    .ok());
    setenv("DELAYS_TABLE", table.c_str(), 1);
    return table;
  }

  std::map<std::string, Counters> Read(const std::string& table) {
    testing::BigtableEmulatorClient client(emulator_);
    auto rows = client.read_rows(testing::BigtableTableName(kProject, kInstance, table));
    EXPECT_TRUE(rows.ok()) << rows.status();
    std::map<std::string, Counters> out;
    if (!rows.ok()) return out;
    for (const auto& [row, cells] : *rows) {
      for (const auto& c : cells) {
        if (c.family != "counters") continue;
        std::int64_t v = 0;
        for (unsigned char byte : c.value) v = (v << 8) | byte;
        (c.qualifier == "delayed" ? out[row].delayed : out[row].minutes) += v;
      }
    }
    return out;
  }

  std::vector<std::string> Args(const fs::path& pipeline, bool restore,
                                const std::string& interval = "500ms") {
    std::vector<std::string> args = {GCPSTREAM_CLI_PATH,
                                     "run",
                                     pipeline.string(),
                                     "--checkpoint-dir",
                                     (dir_ / "chk").string(),
                                     "--checkpoint-interval",
                                     interval};
    if (restore) args.push_back("--restore");
    return args;
  }

  // Runs `pipeline` to its end, killing it `kills` times at random moments (restoring after each
  // kill and after each failed run). Returns how many kills landed before the job finished.
  int RunWithKills(const fs::path& pipeline, int kills, std::mt19937& rng,
                   std::uniform_int_distribution<int> delay_ms) {
    int landed = 0;
    int failed_runs = 0;
    bool restore = false;
    for (int run = 0; run < 200; ++run) {
      const pid_t pid = Spawn(Args(pipeline, restore), (dir_ / "job.log").string(), true);
      restore = true;
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
      if (status == 0) return landed;  // finished
      if (status == -1) {
        if (!kill_this) {
          kill(pid, SIGKILL);
          ADD_FAILURE() << "the last run did not finish in 300 s:\n" << ReadFile(dir_ / "job.log");
          return landed;
        }
        kill(pid, SIGKILL);
        EXPECT_EQ(WaitFor(pid, 10s), 128 + SIGKILL);
        ++landed;
      } else {
        ++failed_runs;  // failed by itself (an ambiguous commit failure): restored the same way
        if (failed_runs > 20) {
          ADD_FAILURE() << "more than 20 failed runs:\n" << ReadFile(dir_ / "job.log");
          return landed;
        }
      }
    }
    ADD_FAILURE() << "200 runs without finishing";
    return landed;
  }

  fs::path dir_;
  fs::path data_;
  std::string emulator_;
  std::unique_ptr<testing::FaultProxy> proxy_;
  std::map<std::string, Counters> expected_;
};

TEST_F(BigtableStagedKillTest, TwentyKillsLeaveEveryCounterExactAndAtLeastOnceOverCounts) {
  const unsigned seed = static_cast<unsigned>(std::random_device()());
  std::printf("random seed %u\n", seed);
  std::fflush(stdout);  // a forked child would flush an inherited copy of the buffer again
  std::mt19937 rng(seed);

  // Exactly once: three CheckAndMutateRow calls are applied and then answered INTERNAL.
  testing::FaultRule ambiguous;
  ambiguous.method = "CheckAndMutateRow";
  ambiguous.action = testing::FaultRule::Action::kForwardThenFail;
  ambiguous.code = absl::StatusCode::kInternal;
  ambiguous.fraction = 0.001;
  ambiguous.times = 3;
  proxy_->add_rule(ambiguous);
  const std::string staged_table = CreateTable();
  const fs::path example =
      fs::path(GCPSTREAM_SOURCE_DIR) / "examples/pipelines/flights-delay-counters.yaml";
  const int landed =
      RunWithKills(example, kKills, rng, std::uniform_int_distribution<int>(300, 2500));
  std::printf("exactly once: %d kills landed, %d calls answered INTERNAL after applying\n", landed,
              proxy_->faults());
  std::fflush(stdout);
  EXPECT_GE(landed, 10) << "the job finished before enough kills landed";
  const auto counted = Read(staged_table);
  EXPECT_EQ(counted.size(), expected_.size());
  int wrong = 0;
  for (const auto& [origin, want] : expected_) {
    auto it = counted.find(origin);
    const Counters got = it == counted.end() ? Counters{} : it->second;
    if (got != want && ++wrong <= 5) {
      ADD_FAILURE() << origin << ": delayed " << got.delayed << " (want " << want.delayed
                    << "), minutes " << got.minutes << " (want " << want.minutes << ")";
    }
  }
  EXPECT_EQ(wrong, 0) << "counters that are not exactly their sum";

  // At least once: an add replayed after a restore counts again. The control is made certain
  // rather than left to random kills (which a fast run can outpace): the run checkpoints only
  // hourly, so once the table shows an add no completed checkpoint covers it; it is killed then,
  // and the next run, with no checkpoint to restore, replays the whole file.
  proxy_->clear_rules();
  testing::FaultRule slow;
  slow.method = "MutateRows";
  slow.action = testing::FaultRule::Action::kDelay;
  slow.delay = 100ms;
  proxy_->add_rule(slow);
  fs::remove_all(dir_ / "chk");
  const std::string plain_table = CreateTable();
  std::string yaml = ReadFile(example);
  const std::string staged =
      "  delivery_guarantee: EXACTLY_ONCE\n  staged_options:\n"
      "    marker_family: flink_commit\n";
  ASSERT_NE(yaml.find(staged), std::string::npos);
  yaml.replace(yaml.find(staged), staged.size(), "  delivery_guarantee: AT_LEAST_ONCE\n");
  const fs::path plain = dir_ / "at-least-once.yaml";
  std::ofstream(plain) << yaml;
  std::int64_t want_total = 0;
  for (const auto& [origin, want] : expected_) want_total += want.delayed;
  auto total = [&] {
    std::int64_t sum = 0;
    for (const auto& [origin, got] : Read(plain_table)) sum += got.delayed;
    return sum;
  };
  const pid_t pid = Spawn(Args(plain, false, "1h"), (dir_ / "job.log").string(), true);
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  std::int64_t seen = 0;
  int exited = -1;
  while (std::chrono::steady_clock::now() < deadline) {
    int raw = 0;
    if (waitpid(pid, &raw, WNOHANG) == pid) {
      exited = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
      break;
    }
    if ((seen = total()) > 0) break;
    std::this_thread::sleep_for(20ms);
  }
  if (exited == -1) {
    kill(pid, SIGKILL);
    EXPECT_EQ(WaitFor(pid, 10s), 128 + SIGKILL);
  }
  ASSERT_GT(seen, 0) << "no add reached the table before the kill (the run "
                     << (exited == -1 ? std::string("was still running after 120 s")
                                      : fmt::format("ended by itself with {}", exited))
                     << "):\n"
                     << ReadFile(dir_ / "job.log");
  RunWithKills(plain, 0, rng, std::uniform_int_distribution<int>(0, 0));  // to its end
  const std::int64_t got_total = total();
  std::printf(
      "at least once: killed with %lld of %lld adds applied and no checkpoint; %lld "
      "counted after the restore\n",
      static_cast<long long>(seen), static_cast<long long>(want_total),
      static_cast<long long>(got_total));
  EXPECT_GE(got_total, want_total) << "at least once never loses an add";
  EXPECT_GT(got_total, want_total) << "the replay after the restore did not count again";
}

}  // namespace
}  // namespace gcpstream::e2e
