// The Spanner change-stream source end to end: the gcpstream CLI runs
// examples/pipelines/flights-spanner-changes-to-bigtable.yaml while the test writes flights
// into Spanner, is killed with SIGKILL after a checkpoint, misses the changes made while it is
// down, and is restored with --restore. Every insert and update — before the kill, during the
// outage and after the restore — must reach Bigtable (at least once; the emulator's partitions
// also split and merge during the run, scripts/emulators.sh).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gcpstream/spanner/admin/database_admin.h"
#include "gcpstream/spanner/client/value.h"
#include "gcpstream/spanner/source/spanner_read_client.h"
#include "tests/e2e/child_process.h"
#include "tests/support/bigtable_emulator.h"
#include "tests/support/emulators.h"

namespace gcpstream::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class SpannerChangeStreamKillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("gcpstream-spanner-cs-e2e-{}", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto channel = testing::EmulatorChannel(testing::Emulator::kSpanner);
    ASSERT_NE(channel, nullptr);
    db_ = connector::DatabaseDestination::of("gcpstream-e2e", testing::UniqueId("cs"), "flights");
    spanner::DatabaseAdmin admin(channel);
    ASSERT_TRUE(admin.CreateInstance(db_.project, db_.instance).ok());
    auto created = admin.CreateDatabase(
        db_, spanner::Dialect::kGoogleSql,
        {"CREATE TABLE Flights (Id STRING(64) NOT NULL, FlightDate STRING(16) NOT NULL, Origin "
         "STRING(3) NOT NULL, Destination STRING(3) NOT NULL, Delay INT64 NOT NULL, Distance "
         "INT64 NOT NULL) PRIMARY KEY (Id)",
         "CREATE CHANGE STREAM FlightsChanges FOR Flights"});
    ASSERT_TRUE(created.ok()) << created;
    const absl::Time start = absl::Now();
    client_ = std::make_shared<spanner::SpannerReadClient>(db_.resource_name(),
                                                           spanner::MakeGrpcSpannerStub(channel));
    bigtable_endpoint_ = testing::EmulatorEndpoint(testing::Emulator::kBigtable);
    bigtable_ = std::make_unique<testing::BigtableEmulatorClient>(bigtable_endpoint_);
    table_ = testing::UniqueId("changes");

    setenv("GCP_PROJECT", db_.project.c_str(), 1);
    setenv("SPANNER_INSTANCE", db_.instance.c_str(), 1);
    setenv("SPANNER_DATABASE", db_.database.c_str(), 1);
    setenv("SPANNER_EMULATOR_HOST", testing::EmulatorEndpoint(testing::Emulator::kSpanner).c_str(),
           1);
    setenv("BIGTABLE_INSTANCE", "e2e", 1);
    setenv("BIGTABLE_EMULATOR_HOST", bigtable_endpoint_.c_str(), 1);
    setenv("FLIGHT_CHANGES_TABLE", table_.c_str(), 1);
    setenv("FLIGHTS_CHANGES_START", spanner::FormatTimestamp(start).c_str(), 1);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Inserts (or, with `update`, rewrites the delay of) flights f<from>..f<to-1>, 25 per commit.
  void Write(int from, int to, bool update) {
    for (int start = from; start < to; start += 25) {
      std::vector<spanner::Mutation> rows;
      for (int i = start; i < std::min(to, start + 25); ++i) {
        auto id = *spanner::Value::String("f" + std::to_string(i));
        if (update) {
          rows.push_back(*spanner::Mutation::Update("Flights")
                              .Set("Id", id)
                              .Set("Delay", spanner::Value::Int64(100000 + i))
                              .Build());
        } else {
          rows.push_back(*spanner::Mutation::Insert("Flights")
                              .Set("Id", id)
                              .Set("FlightDate", *spanner::Value::String("2001/01/01"))
                              .Set("Origin", *spanner::Value::String("SFO"))
                              .Set("Destination", *spanner::Value::String("JFK"))
                              .Set("Delay", spanner::Value::Int64(i))
                              .Set("Distance", spanner::Value::Int64(2 * i))
                              .Build());
        }
      }
      auto committed = client_->data().Commit(std::move(rows));
      ASSERT_TRUE(committed.ok()) << committed.status();
      std::this_thread::sleep_for(20ms);
    }
  }

  std::vector<std::string> Args(bool restore) {
    std::vector<std::string> args = {GCPSTREAM_CLI_PATH,
                                     "run",
                                     (fs::path(GCPSTREAM_SOURCE_DIR) /
                                      "examples/pipelines/flights-spanner-changes-to-bigtable.yaml")
                                         .string(),
                                     "--checkpoint-dir",
                                     (dir_ / "chk").string(),
                                     "--checkpoint-interval",
                                     "500ms"};
    if (restore) args.push_back("--restore");
    return args;
  }

  // The delay Bigtable holds per flight id.
  std::map<std::string, std::string> Delays() {
    std::map<std::string, std::string> out;
    auto rows = bigtable_->read_rows("projects/" + db_.project + "/instances/e2e/tables/" + table_);
    if (!rows.ok()) return out;
    for (const auto& [key, cells] : *rows) {
      // Newest version first, as ReadRows returns them.
      for (const auto& c : cells) {
        if (c.qualifier == "delay" && out.count(key) == 0) out[key] = c.value;
      }
    }
    return out;
  }

  // Waits until every flight f<0..n-1> holds `delay(i)`; fails naming the first that does not.
  void AwaitDelays(int n, const std::function<int(int)>& delay, std::chrono::seconds timeout,
                   pid_t pid) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string wrong;
    while (std::chrono::steady_clock::now() < deadline) {
      auto delays = Delays();
      wrong.clear();
      for (int i = 0; i < n && wrong.empty(); ++i) {
        const std::string id = "f" + std::to_string(i);
        auto it = delays.find(id);
        if (it == delays.end() || it->second != std::to_string(delay(i))) {
          wrong = id + " = " + (it == delays.end() ? std::string("(missing)") : it->second);
        }
      }
      if (wrong.empty()) return;
      int status = 0;
      ASSERT_NE(waitpid(pid, &status, WNOHANG), pid) << "the job ended";
      std::this_thread::sleep_for(200ms);
    }
    FAIL() << "not every change reached Bigtable: " << wrong;
  }

  fs::path dir_;
  connector::DatabaseDestination db_;
  std::shared_ptr<spanner::SpannerReadClient> client_;
  std::unique_ptr<testing::BigtableEmulatorClient> bigtable_;
  std::string bigtable_endpoint_;
  std::string table_;
};

TEST_F(SpannerChangeStreamKillTest, EveryChangeArrivesAcrossAKillAndARestore) {
  const pid_t pid = Spawn(Args(false), (dir_ / "job.log").string(), true);
  Write(0, 300, false);
  AwaitDelays(
      300, [](int i) { return i; }, 90s, pid);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!HasCompletedCheckpoint(dir_ / "chk") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(HasCompletedCheckpoint(dir_ / "chk")) << ReadFile(dir_ / "job.log");
  // More changes in flight at the kill, then changes made while nothing reads.
  Write(300, 400, false);
  kill(pid, SIGKILL);
  ASSERT_EQ(WaitFor(pid, 10s), 128 + SIGKILL);
  Write(400, 600, false);
  Write(0, 50, true);

  const pid_t restored = Spawn(Args(true), (dir_ / "restored.log").string(), true);
  Write(600, 700, false);
  AwaitDelays(
      700, [](int i) { return i < 50 ? 100000 + i : i; }, 120s, restored);
  kill(restored, SIGTERM);
  ASSERT_EQ(WaitFor(restored, 30s), 0) << ReadFile(dir_ / "restored.log");
  // The restored run resumed where the checkpoint was: it read far fewer changes than the 750
  // made since the start position (a run from scratch would read them all).
  const std::string log = ReadFile(dir_ / "restored.log");
  const auto at = log.find("records    in ");
  ASSERT_NE(at, std::string::npos) << log;
  const long read = std::stol(log.substr(at + 13));
  std::printf("the restored run read %ld changes\n", read);
  EXPECT_LT(read, 750) << log;
}

}  // namespace
}  // namespace gcpstream::e2e
