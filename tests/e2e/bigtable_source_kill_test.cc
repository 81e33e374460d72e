// The Bigtable scan source end to end: the gcpstream CLI runs
// examples/pipelines/flights-bigtable-to-pubsub.yaml over a table of 20,000 rows (split by the
// emulator's row-key samples), is killed with SIGKILL mid-scan, restored with --restore and
// finishes. Every row must reach the topic at least once, and the restored run must resume its
// splits past the rows already emitted rather than read the table again: it reads fewer rows
// than the table holds.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/child_process.h"
#include "tests/fakes/fault_proxy.h"
#include "tests/support/bigtable_emulator.h"
#include "tests/support/emulators.h"
#include "tests/support/pubsub_emulator.h"

namespace gcpstream::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr int kRows = 20000;
constexpr char kProject[] = "gcpstream-e2e";
constexpr char kInstance[] = "scan";

std::string Key(int i) { return fmt::format("A{:02}#2001/01/01#{:05}", i % 64, i); }

class BigtableSourceKillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("gcpstream-bigtable-src-e2e-{}", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const std::string bigtable = testing::EmulatorEndpoint(testing::Emulator::kBigtable);
    ASSERT_FALSE(bigtable.empty());
    testing::BigtableEmulatorClient client(bigtable);
    table_ = testing::UniqueId("flights");
    const std::string name = testing::BigtableTableName(kProject, kInstance, table_);
    google::bigtable::admin::v2::ColumnFamily family;
    family.mutable_gc_rule()->set_max_num_versions(1);
    ASSERT_TRUE(client.create_table(name, {{"f", family}}).ok());
    for (int start = 0; start < kRows; start += 1000) {
      google::bigtable::v2::MutateRowsRequest request;
      request.set_table_name(name);
      for (int i = start; i < start + 1000; ++i) {
        auto* entry = request.add_entries();
        entry->set_row_key(Key(i));
        for (const auto& [q, v] : std::vector<std::pair<std::string, std::string>>{
                 {"delay", std::to_string(i)}, {"distance", "100"}, {"destination", "JFK"}}) {
          auto* cell = entry->add_mutations()->mutable_set_cell();
          cell->set_family_name("f");
          cell->set_column_qualifier(q);
          cell->set_timestamp_micros(1000);
          cell->set_value(v);
        }
      }
      auto result = client.mutate_rows(request);
      ASSERT_TRUE(result.rpc.ok()) << result.rpc.error_message();
      ASSERT_TRUE(result.entries.empty() ||
                  std::all_of(result.entries.begin(), result.entries.end(),
                              [](const auto& e) { return e.second.code() == 0; }));
    }

    pubsub_endpoint_ = testing::EmulatorEndpoint(testing::Emulator::kPubSub);
    pubsub_ = std::make_unique<testing::PubSubEmulatorClient>(pubsub_endpoint_);
    topic_ = testing::UniqueId("readback");
    ASSERT_TRUE(pubsub_->create_topic(TopicName()).ok());
    ASSERT_TRUE(pubsub_->create_subscription(SubscriptionName(), TopicName()).ok());

    setenv("GCP_PROJECT", kProject, 1);
    setenv("BIGTABLE_INSTANCE", kInstance, 1);
    setenv("FLIGHTS_TABLE", table_.c_str(), 1);
    setenv("BIGTABLE_EMULATOR_HOST", bigtable.c_str(), 1);
    setenv("FLIGHTS_READBACK_TOPIC", topic_.c_str(), 1);
  }
  void TearDown() override {
    // Later tests of this process find the emulator through this variable.
    setenv("PUBSUB_EMULATOR_HOST", pubsub_endpoint_.c_str(), 1);
    if (!HasFailure()) fs::remove_all(dir_);
  }

  std::string TopicName() const {
    return std::string("projects/") + kProject + "/topics/" + topic_;
  }
  std::string SubscriptionName() const {
    return std::string("projects/") + kProject + "/subscriptions/" + topic_ + "-sub";
  }

  std::vector<std::string> Args(bool restore) {
    std::vector<std::string> args = {
        GCPSTREAM_CLI_PATH,
        "run",
        (fs::path(GCPSTREAM_SOURCE_DIR) / "examples/pipelines/flights-bigtable-to-pubsub.yaml")
            .string(),
        "--checkpoint-dir",
        (dir_ / "chk").string(),
        "--checkpoint-interval",
        "1s"};
    if (restore) args.push_back("--restore");
    return args;
  }

  // Pulls what arrived into seen_ (row key -> deliveries; the delay must match the key).
  void Pull(std::size_t at_least, std::chrono::milliseconds timeout) {
    for (auto& m : pubsub_->pull(SubscriptionName(), at_least, timeout)) {
      auto row = nlohmann::json::parse(m.data(), nullptr, false);
      ASSERT_FALSE(row.is_discarded()) << m.data();
      const std::string key = row.value("_row_key", "");
      ++seen_[key];
      ASSERT_GT(key.size(), 5u) << m.data();
      EXPECT_EQ(row.value("delay", ""), std::to_string(std::stoi(key.substr(key.size() - 5))))
          << m.data();
    }
  }

  fs::path dir_;
  std::string table_;
  std::unique_ptr<testing::PubSubEmulatorClient> pubsub_;
  std::string pubsub_endpoint_;
  std::string topic_;
  std::map<std::string, int> seen_;
};

TEST_F(BigtableSourceKillTest, AKillAndARestoreDeliverEveryRowAndTheRestoreResumes) {
  // The first run publishes through a proxy that delays every Publish by a second, so the
  // sink's in-flight cap holds the source back and the job is caught part-way through the scan
  // with checkpoints completing.
  auto proxy = testing::FaultProxy::start(pubsub_endpoint_);
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  testing::FaultRule slow;
  slow.method = "Publish";
  slow.action = testing::FaultRule::Action::kDelay;
  slow.delay = 1s;
  (*proxy)->add_rule(slow);
  setenv("PUBSUB_EMULATOR_HOST", (*proxy)->endpoint().c_str(), 1);
  const pid_t pid = Spawn(Args(false), (dir_ / "job.log").string(), true);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (((*proxy)->calls("Publish") < 4 || !HasCompletedCheckpoint(dir_ / "chk")) &&
         std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    ASSERT_NE(waitpid(pid, &status, WNOHANG), pid) << "the job ended before it was killed:\n"
                                                   << ReadFile(dir_ / "job.log");
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(HasCompletedCheckpoint(dir_ / "chk")) << "60 s without a completed checkpoint:\n"
                                                    << ReadFile(dir_ / "job.log");
  kill(pid, SIGKILL);
  ASSERT_EQ(WaitFor(pid, 10s), 128 + SIGKILL);
  (*proxy)->clear_rules();

  const std::size_t first_log = ReadFile(dir_ / "job.log").size();
  const pid_t restored = Spawn(Args(true), (dir_ / "job.log").string(), true);
  ASSERT_EQ(WaitFor(restored, 300s), 0) << ReadFile(dir_ / "job.log");
  const std::string restored_log = ReadFile(dir_ / "job.log").substr(first_log);

  const auto drain_deadline = std::chrono::steady_clock::now() + 120s;
  std::size_t distinct = 0;
  while (std::chrono::steady_clock::now() < drain_deadline) {
    Pull(2 * kRows, 5s);  // long pulls: a cancelled one strands what it had in flight
    distinct = 0;
    for (int i = 0; i < kRows; ++i) distinct += seen_.count(Key(i));
    if (distinct == static_cast<std::size_t>(kRows)) break;
  }
  std::string first_missing;
  for (int i = 0; i < kRows && first_missing.empty(); ++i) {
    if (!seen_.count(Key(i))) first_missing = Key(i);
  }
  EXPECT_EQ(distinct, static_cast<std::size_t>(kRows))
      << "rows never published, e.g. " << first_missing;
  EXPECT_NE(restored_log.find("BigtableSource: restored"), std::string::npos) << restored_log;
  // The restored run's summary counts what it read: less than the table, or it started over.
  std::smatch in;
  ASSERT_TRUE(std::regex_search(restored_log, in, std::regex(R"(in ([0-9,]+), invalid)")))
      << restored_log;
  std::string digits = in[1].str();
  digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
  std::printf("the restored run read %s of %d rows\n", digits.c_str(), kRows);
  EXPECT_LT(std::stoi(digits), kRows) << "the restored run read the whole table again";
  EXPECT_GT(std::stoi(digits), 0);
}

}  // namespace
}  // namespace gcpstream::e2e
