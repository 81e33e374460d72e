// The Spanner snapshot source end to end: the gcpstream CLI runs
// examples/pipelines/flights-spanner-to-pubsub.yaml (a table of 20,000 flight rows, read at one
// snapshot, published to Pub/Sub), is killed with SIGKILL mid-read, restored with --restore and
// finishes. Every row of the snapshot must reach the topic at least once; a row committed after
// the snapshot (between the kill and the restore) must never appear, because the restore reads
// the unfinished partitions again in the same transaction.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "gcpstream/spanner/admin/database_admin.h"
#include "gcpstream/spanner/source/spanner_read_client.h"
#include "tests/e2e/child_process.h"
#include "tests/fakes/fault_proxy.h"
#include "tests/support/emulators.h"
#include "tests/support/pubsub_emulator.h"

namespace gcpstream::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr int kRows = 20000;

class SpannerSourceKillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("gcpstream-spanner-src-e2e-{}", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto channel = testing::EmulatorChannel(testing::Emulator::kSpanner);
    ASSERT_NE(channel, nullptr);
    db_ = connector::DatabaseDestination::of("gcpstream-e2e", testing::UniqueId("src"), "flights");
    spanner::DatabaseAdmin admin(channel);
    ASSERT_TRUE(admin.CreateInstance(db_.project, db_.instance).ok());
    auto created = admin.CreateDatabase(
        db_, spanner::Dialect::kGoogleSql,
        {"CREATE TABLE Flights (Id STRING(64) NOT NULL, FlightDate STRING(16) NOT NULL, Origin "
         "STRING(3) NOT NULL, Destination STRING(3) NOT NULL, Delay INT64 NOT NULL, Distance "
         "INT64 NOT NULL) PRIMARY KEY (Id)"});
    ASSERT_TRUE(created.ok()) << created;
    client_ = std::make_shared<spanner::SpannerReadClient>(db_.resource_name(),
                                                           spanner::MakeGrpcSpannerStub(channel));
    Insert("f", 0, kRows);

    pubsub_endpoint_ = testing::EmulatorEndpoint(testing::Emulator::kPubSub);
    pubsub_ = std::make_unique<testing::PubSubEmulatorClient>(pubsub_endpoint_);
    topic_ = testing::UniqueId("snapshot");
    ASSERT_TRUE(pubsub_->create_topic(TopicName()).ok());
    ASSERT_TRUE(pubsub_->create_subscription(SubscriptionName(), TopicName()).ok());

    setenv("GCP_PROJECT", db_.project.c_str(), 1);
    setenv("SPANNER_INSTANCE", db_.instance.c_str(), 1);
    setenv("SPANNER_DATABASE", db_.database.c_str(), 1);
    setenv("SPANNER_EMULATOR_HOST", testing::EmulatorEndpoint(testing::Emulator::kSpanner).c_str(),
           1);
    setenv("FLIGHTS_SNAPSHOT_TOPIC", topic_.c_str(), 1);
  }
  void TearDown() override {
    // Later tests of this process find the emulator through this variable.
    setenv("PUBSUB_EMULATOR_HOST", pubsub_endpoint_.c_str(), 1);
    if (!HasFailure()) fs::remove_all(dir_);
  }

  std::string TopicName() const { return "projects/" + db_.project + "/topics/" + topic_; }
  std::string SubscriptionName() const {
    return "projects/" + db_.project + "/subscriptions/" + topic_ + "-sub";
  }

  void Insert(const std::string& prefix, int from, int to) {
    for (int start = from; start < to; start += 1000) {
      std::vector<spanner::Mutation> rows;
      for (int i = start; i < std::min(to, start + 1000); ++i) {
        rows.push_back(*spanner::Mutation::Insert("Flights")
                            .Set("Id", *spanner::Value::String(prefix + std::to_string(i)))
                            .Set("FlightDate", *spanner::Value::String("2001/01/01"))
                            .Set("Origin", *spanner::Value::String(fmt::format("A{:02}", i % 64)))
                            .Set("Destination", *spanner::Value::String("JFK"))
                            // 64 origins: the sink's ordering keys, published in parallel
                            .Set("Delay", spanner::Value::Int64(i))
                            .Set("Distance", spanner::Value::Int64(2 * i))
                            .Build());
      }
      auto committed = client_->data().Commit(std::move(rows));
      ASSERT_TRUE(committed.ok()) << committed.status();
    }
  }

  std::vector<std::string> Args(bool restore) {
    std::vector<std::string> args = {
        GCPSTREAM_CLI_PATH,
        "run",
        (fs::path(GCPSTREAM_SOURCE_DIR) / "examples/pipelines/flights-spanner-to-pubsub.yaml")
            .string(),
        "--checkpoint-dir",
        (dir_ / "chk").string(),
        "--checkpoint-interval",
        "1s"};
    if (restore) args.push_back("--restore");
    return args;
  }

  // Pulls what arrived into seen_ (Id -> deliveries; the delay must match the Id).
  void Pull(std::size_t at_least, std::chrono::milliseconds timeout) {
    for (auto& m : pubsub_->pull(SubscriptionName(), at_least, timeout)) {
      auto row = nlohmann::json::parse(m.data(), nullptr, false);
      ASSERT_FALSE(row.is_discarded()) << m.data();
      const std::string id = row.value("Id", "");
      ++seen_[id];
      if (id.size() > 1 && id[0] == 'f') {
        EXPECT_EQ(row.value("Delay", -1), std::stoi(id.substr(1))) << m.data();
      }
    }
  }

  fs::path dir_;
  connector::DatabaseDestination db_;
  std::shared_ptr<spanner::SpannerReadClient> client_;
  std::unique_ptr<testing::PubSubEmulatorClient> pubsub_;
  std::string pubsub_endpoint_;
  std::string topic_;
  std::map<std::string, int> seen_;
};

TEST_F(SpannerSourceKillTest, AKillAndARestoreDeliverEveryRowOfTheSnapshotAndNothingNewer) {
  // The first run publishes through a proxy that delays every Publish by a second, so the
  // sink's in-flight cap holds the source back and the job is caught part-way through the
  // snapshot, with checkpoints completing (unthrottled, the emulators finish in a second).
  auto proxy = testing::FaultProxy::start(pubsub_endpoint_);
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  testing::FaultRule slow;
  slow.method = "Publish";
  slow.action = testing::FaultRule::Action::kDelay;
  slow.delay = 1s;
  (*proxy)->add_rule(slow);
  setenv("PUBSUB_EMULATOR_HOST", (*proxy)->endpoint().c_str(), 1);
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const pid_t pid = Spawn(Args(false), (dir_ / "job.log").string(), true);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  // Progress is watched at the proxy and on disk, not by pulling: a pull cancelled
  // mid-delivery strands its messages for a minute on the emulator. The kill comes once rows
  // were published and a checkpoint completed.
  while (((*proxy)->calls("Publish") < 4 || !HasCompletedCheckpoint(dir_ / "chk")) &&
         std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    ASSERT_NE(waitpid(pid, &status, WNOHANG), pid) << "the job ended before it was killed:\n"
                                                   << ReadFile(dir_ / "job.log");
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(HasCompletedCheckpoint(dir_ / "chk")) << "60 s without a completed checkpoint:\n"
                                                    << ReadFile(dir_ / "job.log");
  const double killed_at = seconds();
  const int killed_publishes = (*proxy)->calls("Publish");
  kill(pid, SIGKILL);
  ASSERT_EQ(WaitFor(pid, 10s), 128 + SIGKILL);

  // Committed after the snapshot: the restored read must not see these.
  Insert("late", 0, 100);
  // The restored run keeps the endpoints of the run it restores: the proxy stops delaying.
  (*proxy)->clear_rules();

  const pid_t restored = Spawn(Args(true), (dir_ / "job.log").string(), true);
  ASSERT_EQ(WaitFor(restored, 300s), 0) << ReadFile(dir_ / "job.log");
  const double restored_at = seconds();
  const auto drain_deadline = std::chrono::steady_clock::now() + 120s;
  std::size_t distinct = 0;
  while (std::chrono::steady_clock::now() < drain_deadline) {
    Pull(2 * kRows, 5s);  // long pulls: a cancelled one strands what it had in flight
    distinct = 0;
    for (int i = 0; i < kRows; ++i) distinct += seen_.count("f" + std::to_string(i));
    if (distinct == static_cast<std::size_t>(kRows)) break;
  }
  std::printf(
      "killed after %.1f s and %d Publish calls; restored run done at %.1f s; all pulled "
      "at %.1f s\n",
      killed_at, killed_publishes, restored_at, seconds());
  std::string first_missing;
  for (int i = 0; i < kRows && first_missing.empty(); ++i) {
    if (!seen_.count("f" + std::to_string(i))) first_missing = "f" + std::to_string(i);
  }
  EXPECT_EQ(distinct, static_cast<std::size_t>(kRows))
      << "rows of the snapshot never published, e.g. " << first_missing;
  EXPECT_EQ(seen_.count("late0"), 0u) << "the restore read rows committed after the snapshot";
  const std::string log = ReadFile(dir_ / "job.log");
  EXPECT_NE(log.find("restored at snapshot"), std::string::npos) << log;
}

}  // namespace
}  // namespace gcpstream::e2e
