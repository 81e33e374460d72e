// Kills the crash job (a separate process) with SIGKILL at random moments, restores it from its
// checkpoint directory each time, lets the last run finish, and counts lost and duplicated
// records: at-least-once must lose nothing; two-phase commit must lose and duplicate nothing.
//
// Cycles: GCPSTREAM_CRASH_CYCLES (default 20).
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
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/child_process.h"

namespace gcpstream::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

int Cycles() {
  const char* v = std::getenv("GCPSTREAM_CRASH_CYCLES");
  return v != nullptr ? std::atoi(v) : 20;
}

// Enough input that every cycle's kill lands mid-stream: a cycle advances the job by roughly
// 12,000 records (the job paces itself at about 40,000 records/s).
const std::int64_t kRecords = std::max<std::int64_t>(400000, Cycles() * 20000LL);

struct Counts {
  std::int64_t lost = 0;
  std::int64_t duplicated = 0;
  std::int64_t torn = 0;
};

// Reads every valid record line under `dir` (recursively, only files accepted by `take`).
Counts Verify(const fs::path& dir, const std::function<bool(const fs::path&)>& take) {
  std::vector<int> seen(kRecords, 0);
  Counts c;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file() || !take(entry.path())) continue;
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      const auto comma = line.find(',');
      if (comma == std::string::npos) {
        ++c.torn;
        continue;
      }
      try {
        const std::int64_t v = std::stoll(line.substr(0, comma));
        const std::uint64_t check = std::stoull(line.substr(comma + 1));
        if (v < 0 || v >= kRecords ||
            check != static_cast<std::uint64_t>(v) * 2654435761ULL % 1000003ULL) {
          ++c.torn;
          continue;
        }
        seen[static_cast<std::size_t>(v)]++;
      } catch (...) {
        ++c.torn;
      }
    }
  }
  for (int n : seen) {
    if (n == 0) ++c.lost;
    if (n > 1) c.duplicated += n - 1;
  }
  return c;
}

Counts RunCrashCycles(const std::string& sink) {
  const fs::path root =
      fs::temp_directory_path() / fmt::format("gcpstream-crash-{}-{}", sink, getpid());
  fs::remove_all(root);
  fs::create_directories(root / "out");
  fs::create_directories(root / "checkpoints");
  const std::vector<std::string> args = {CRASH_JOB_PATH,
                                         "--sink=" + sink,
                                         "--out",
                                         (root / "out").string(),
                                         "--checkpoints",
                                         (root / "checkpoints").string(),
                                         "--restore",
                                         "--records",
                                         std::to_string(kRecords),
                                         "--interval-ms",
                                         "40",
                                         "--commit-delay-ms",
                                         "15"};
  std::mt19937 random(std::random_device{}());
  // Kill anywhere from just after start-up (no checkpoint yet) to well into the stream.
  std::uniform_int_distribution<int> kill_after_ms(20, 700);
  const int cycles = Cycles();
  int killed = 0;
  for (int i = 0; i < cycles; ++i) {
    const pid_t pid = Spawn(args);
    std::this_thread::sleep_for(std::chrono::milliseconds(kill_after_ms(random)));
    if (kill(pid, SIGKILL) == 0) ++killed;
    WaitFor(pid, 10s);
    if (fs::exists(root / "out" / "DONE")) break;  // finished before the kill
  }
  // The last run goes to the end.
  if (!fs::exists(root / "out" / "DONE")) {
    const pid_t pid = Spawn(args);
    const int status = WaitFor(pid, 120s);
    if (status != 0) kill(pid, SIGKILL);
    EXPECT_EQ(status, 0) << "the final run did not finish cleanly";
  }
  EXPECT_TRUE(fs::exists(root / "out" / "DONE"));
  Counts counts = Verify(root / "out", [&](const fs::path& p) {
    if (sink == "alo") return p.filename().string().rfind("alo-", 0) == 0;
    return p.parent_path().filename() == "committed";
  });
  std::printf(
      "[crash %s] %d kill cycles (%d killed): lost %lld, duplicated %lld, torn lines "
      "%lld\n",
      sink.c_str(), cycles, killed, static_cast<long long>(counts.lost),
      static_cast<long long>(counts.duplicated), static_cast<long long>(counts.torn));
  fs::remove_all(root);
  return counts;
}

TEST(CrashTest, AtLeastOnceFileSinkLosesNothingAcrossKills) {
  Counts counts = RunCrashCycles("alo");
  EXPECT_EQ(counts.lost, 0);
}

TEST(CrashTest, TwoPhaseCommitFileSinkIsExactlyOnceAcrossKills) {
  Counts counts = RunCrashCycles("2pc");
  EXPECT_EQ(counts.lost, 0);
  EXPECT_EQ(counts.duplicated, 0);
  EXPECT_EQ(counts.torn, 0) << "committed files must never hold a torn line";
}

}  // namespace
}  // namespace gcpstream::e2e
