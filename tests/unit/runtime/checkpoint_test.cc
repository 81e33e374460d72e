// Checkpoints, restore, restart, savepoints and two-phase commit in real in-process jobs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "gcpstream/connector/in_flight_gate.h"
#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/checkpoint_storage.h"
#include "gcpstream/runtime/proto/checkpoint.pb.h"
#include "gcpstream/runtime/state_redistribution.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "tests/support/transactional_test_sink.h"

namespace gcpstream {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing::TransactionalTestSink;
namespace fs = std::filesystem;

std::string TempDir(const std::string& name) {
  auto dir = fs::temp_directory_path() / fmt::format("gcpstream-{}-{}", name, getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// Every value in [0, n) exactly once; on failure, says what is missing or doubled.
void ExpectExactlyOnce(std::vector<std::int64_t> values, std::int64_t n) {
  std::map<std::int64_t, int> counts;
  for (auto v : values) counts[v]++;
  std::int64_t missing = 0, duplicated = 0, first_missing = -1, first_dup = -1;
  for (std::int64_t i = 0; i < n; ++i) {
    const int c = counts.count(i) ? counts[i] : 0;
    if (c == 0 && missing++ == 0) first_missing = i;
    if (c > 1 && duplicated++ == 0) first_dup = i;
  }
  EXPECT_EQ(missing, 0) << "lost records, first " << first_missing;
  EXPECT_EQ(duplicated, 0) << "duplicated records, first " << first_dup;
  EXPECT_EQ(values.size(), static_cast<std::size_t>(n));
}

// Slows a stream down so checkpoints land in the middle of it.
std::int64_t Throttle(std::int64_t v) {
  if (v % 200 == 0) std::this_thread::sleep_for(1ms);
  return v;
}

TEST(CheckpointTest, PeriodicCheckpointsAreDurableRetainedAndCommitExactlyOnce) {
  const std::string dir = TempDir("periodic");
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  env.enable_checkpointing(20ms);
  env.config().checkpointing.directory = dir;
  env.config().checkpointing.retained = 2;
  auto sink = std::make_shared<TransactionalTestSink>();
  env.from_source(std::make_shared<NumberSequenceSource>(0, 59999, 8),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .map(Throttle, "throttle")
      .key_by([](const std::int64_t& v) { return v % 13; })
      .map([](std::int64_t v) { return v; }, "identity")
      .sink_to(sink, "tx");
  auto result = env.execute("periodic");
  ASSERT_TRUE(result.status.ok()) << result.status;
  ASSERT_TRUE(result.last_completed_checkpoint.has_value());
  EXPECT_GE(*result.last_completed_checkpoint, 3) << "expected several checkpoints";
  ExpectExactlyOnce(sink->destination()->snapshot(), 60000);
  // Only the `retained` newest checkpoints stay, each complete (with _metadata).
  int kept = 0;
  for (const auto& job : fs::directory_iterator(dir)) {
    for (const auto& chk : fs::directory_iterator(job.path())) {
      ++kept;
      EXPECT_TRUE(fs::exists(chk.path() / "_metadata")) << chk.path();
    }
  }
  EXPECT_EQ(kept, 2);
  auto latest = runtime::CheckpointStorage::find_latest(dir);
  ASSERT_TRUE(latest.ok()) << latest.status();
  auto read = runtime::CheckpointStorage::read(*latest);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->id, *result.last_completed_checkpoint);
}

TEST(CheckpointTest, BoundedJobWithCheckpointingCommitsThroughAFinalCheckpoint) {
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  env.enable_checkpointing(10s);  // longer than the job: only the final checkpoint commits
  auto sink = std::make_shared<TransactionalTestSink>();
  env.from_source(std::make_shared<NumberSequenceSource>(0, 999, 4),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .sink_to(sink, "tx");
  const auto start = std::chrono::steady_clock::now();
  auto result = env.execute("final");
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "must not wait for the interval";
  ASSERT_TRUE(result.last_completed_checkpoint.has_value());
  ExpectExactlyOnce(sink->destination()->snapshot(), 1000);
}

TEST(CheckpointTest, RestartFromTheLatestCheckpointLosesAndDuplicatesNothing) {
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  env.enable_checkpointing(15ms);
  env.config().restart_strategy.kind = runtime::RestartStrategyKind::kFixedDelay;
  env.config().restart_strategy.max_attempts = 3;
  env.config().restart_strategy.delay = 10ms;
  auto failed = std::make_shared<std::atomic<int>>(0);
  auto sink = std::make_shared<TransactionalTestSink>();
  env.from_source(std::make_shared<NumberSequenceSource>(0, 29999, 6),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .map(Throttle, "throttle")
      .map(
          [failed](std::int64_t v) {
            // Fail twice, in the middle, after checkpoints have completed.
            if ((v == 15000 || v == 25000) && failed->fetch_add(1) < 2) {
              throw std::runtime_error("injected failure");
            }
            return v;
          },
          "fail twice")
      .rebalance()
      .sink_to(sink, "tx");
  auto result = env.execute("restart");
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(result.restarts, 2);
  ExpectExactlyOnce(sink->destination()->snapshot(), 30000);
}

TEST(CheckpointTest, WithoutARestartStrategyAFailureEndsTheJob) {
  StreamExecutionEnvironment env;
  env.enable_checkpointing(10ms);
  auto sink = std::make_shared<TransactionalTestSink>();
  env.from_source(std::make_shared<NumberSequenceSource>(0, 9999, 2),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .map([](std::int64_t v) -> std::int64_t {
        if (v == 500) throw std::runtime_error("boom");
        return v;
      })
      .sink_to(sink, "tx");
  auto result = env.execute("no-restart");
  EXPECT_FALSE(result.status.ok());
  EXPECT_THAT(std::string(result.status.message()), HasSubstr("boom"));
  EXPECT_EQ(result.restarts, 0);
}

// A sink whose flush never completes within the checkpoint timeout.
class StallingSink final : public Sink<std::int64_t> {
 public:
  absl::StatusOr<std::unique_ptr<SinkWriter<std::int64_t>>> create_writer(
      WriterInitContext& ctx) const override {
    class Writer final : public SinkWriter<std::int64_t> {
     public:
      explicit Writer(MailboxExecutor& mailbox) : mailbox_(mailbox) {}
      absl::Status write(const std::int64_t&, const SinkWriterContext&) override {
        return absl::OkStatus();
      }
      absl::Status flush(bool end_of_input) override {
        if (end_of_input) return absl::OkStatus();
        // Waits (yielding), as every sink does, for a completion that never comes.
        connector::ProgressPolicy policy;
        policy.connector = "Test";
        policy.stall_warning_interval = std::chrono::milliseconds(20);
        connector::InFlightGate gate(10, 1 << 20, policy, mailbox_);
        gate.acquire(1);
        return gate.drain("flushing for a checkpoint");
      }
      absl::Status close() override { return absl::OkStatus(); }

     private:
      MailboxExecutor& mailbox_;
    };
    return std::unique_ptr<SinkWriter<std::int64_t>>(new Writer(ctx.mailbox_executor()));
  }
};

TEST(CheckpointTest, ACheckpointTimeoutFailsTheJobNamingTheCheckpointTheSubtaskAndItsWait) {
  StreamExecutionEnvironment env;
  env.enable_checkpointing(10ms);
  env.config().checkpointing.timeout = 200ms;
  env.from_source(std::make_shared<NumberSequenceSource>(0, 1'000'000'000, 1),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .sink_to(std::make_shared<StallingSink>(), "stalls");
  auto result = env.execute("timeout");
  ASSERT_FALSE(result.status.ok());
  EXPECT_EQ(result.status.code(), absl::StatusCode::kDeadlineExceeded) << result.status;
  EXPECT_THAT(std::string(result.status.message()), HasSubstr("checkpoint 1 expired"));
  EXPECT_THAT(std::string(result.status.message()), HasSubstr("numbers -> stalls (1/1)"));
  // ... and what that subtask is waiting on.
  EXPECT_THAT(std::string(result.status.message()),
              HasSubstr("(waiting: Test sink: no request has completed"));
  EXPECT_THAT(std::string(result.status.message()), HasSubstr("flushing for a checkpoint"));
}

// Runs the throttled sequence into a transactional sink at `parallelism`, optionally from a
// savepoint, optionally stopping with a savepoint after `stop_after`.
struct RunOutcome {
  runtime::JobResult result;
  std::vector<std::int64_t> visible;
  std::string savepoint;
};

// The destination is shared between runs, as a real one is: committing a restored committable
// again must be recognised as already done.
RunOutcome RunSavepointJob(std::shared_ptr<TransactionalTestSink> sink, int parallelism,
                           const std::string& restore_from, const std::string& savepoint_dir,
                           std::int64_t n) {
  StreamExecutionEnvironment env;
  env.set_parallelism(parallelism);
  env.enable_checkpointing(25ms);
  env.config().restore_from = restore_from;
  env.from_source(std::make_shared<NumberSequenceSource>(0, n - 1, 6),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .uid("numbers")
      .map(Throttle, "throttle")
      .uid("throttle")
      .key_by([](const std::int64_t& v) { return v % 5; })
      .map([](std::int64_t v) { return v; }, "identity")
      .uid("identity")
      .sink_to(sink, "tx");
  env.node(env.graph().nodes.size() - 1).uid = "tx";
  auto runner = env.create_runner("savepoints");
  RunOutcome outcome;
  std::thread stopper;
  if (!savepoint_dir.empty()) {
    stopper = std::thread([&] {
      std::this_thread::sleep_for(150ms);
      auto path = runner->stop_with_savepoint(savepoint_dir);
      if (path.ok()) outcome.savepoint = *path;
    });
  }
  outcome.result = runner->run();
  if (stopper.joinable()) stopper.join();
  outcome.visible = sink->destination()->snapshot();
  return outcome;
}

TEST(CheckpointTest, ASavepointAtParallelismTwoRestoresAtOneAndThreeWithTheSameOutput) {
  constexpr std::int64_t kN = 200000;
  const std::string dir = TempDir("savepoints");
  auto first_sink = std::make_shared<TransactionalTestSink>();
  RunOutcome first = RunSavepointJob(first_sink, 2, "", dir, kN);
  ASSERT_TRUE(first.result.status.ok()) << first.result.status;
  ASSERT_FALSE(first.savepoint.empty()) << "stop-with-savepoint did not complete";
  ASSERT_LT(first.visible.size(), static_cast<std::size_t>(kN)) << "stopped too late to matter";
  std::vector<std::int64_t> visible_at_savepoint;
  std::set<std::string> applied_at_savepoint;
  {
    std::lock_guard lock(first_sink->destination()->mu);
    visible_at_savepoint = first_sink->destination()->visible;
    applied_at_savepoint = first_sink->destination()->applied;
  }
  for (int p : {1, 3}) {
    // Each restore continues from the same destination state the savepoint left.
    auto sink = std::make_shared<TransactionalTestSink>();
    sink->destination()->visible = visible_at_savepoint;
    sink->destination()->applied = applied_at_savepoint;
    RunOutcome second = RunSavepointJob(sink, p, first.savepoint, "", kN);
    ASSERT_TRUE(second.result.status.ok()) << "parallelism " << p << ": " << second.result.status;
    SCOPED_TRACE(::testing::Message() << "restored at parallelism " << p);
    ExpectExactlyOnce(second.visible, kN);
  }
}

// Keyed reduce state survives a stop-with-savepoint and a restore at another parallelism: each
// key's count continues where it stopped, on whichever subtask owns its key group now.
runtime::JobResult RunCounting(int parallelism, const std::string& restore_from,
                               const std::string& savepoint_dir, std::int64_t n,
                               std::map<std::int64_t, std::int64_t>* final_counts) {
  StreamExecutionEnvironment env;
  env.set_parallelism(parallelism);
  env.enable_checkpointing(20ms);
  env.config().restore_from = restore_from;
  using Count = std::pair<std::int64_t, std::int64_t>;
  auto sink = std::make_shared<CollectSink<Count>>();
  env.from_source(std::make_shared<NumberSequenceSource>(0, n - 1, 4),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .uid("numbers")
      .map(
          [](std::int64_t v) {
            return Count{Throttle(v) % 10, 1};
          },
          "pair")
      .uid("pair")
      .key_by([](const Count& c) { return c.first; })
      .reduce(
          [](const Count& a, const Count& b) {
            return Count{a.first, a.second + b.second};
          },
          "count")
      .uid("count")
      .sink_to(sink, "collect");
  env.node(env.graph().nodes.size() - 1).uid = "collect";
  auto runner = env.create_runner("counting");
  std::thread stopper;
  if (!savepoint_dir.empty()) {
    stopper = std::thread([&] {
      std::this_thread::sleep_for(100ms);
      (void)runner->stop_with_savepoint(savepoint_dir);
    });
  }
  auto result = runner->run();
  if (stopper.joinable()) stopper.join();
  for (const auto& [k, c] : sink->collected()->snapshot()) {
    (*final_counts)[k] = std::max((*final_counts)[k], c);
  }
  return result;
}

TEST(CheckpointTest, KeyedStateFollowsItsKeyGroupsAcrossARescale) {
  constexpr std::int64_t kN = 100000;
  const std::string dir = TempDir("keyed");
  std::map<std::int64_t, std::int64_t> before;
  auto first = RunCounting(2, "", dir, kN, &before);
  ASSERT_TRUE(first.status.ok()) << first.status;
  ASSERT_TRUE(first.last_completed_checkpoint.has_value());
  std::int64_t counted_before = 0;
  for (const auto& [k, c] : before) counted_before += c;
  ASSERT_LT(counted_before, kN) << "the savepoint came after the end of input";
  std::map<std::int64_t, std::int64_t> after;
  auto second = RunCounting(3, first.last_checkpoint_path, "", kN, &after);
  ASSERT_TRUE(second.status.ok()) << second.status;
  ASSERT_EQ(after.size(), 10u);
  for (const auto& [k, c] : after) EXPECT_EQ(c, kN / 10) << "key " << k;
}

TEST(CheckpointStorageTest, RejectsAnUnknownFormatVersionClearly) {
  const std::string dir = TempDir("format");
  runtime::CompletedCheckpoint cp;
  cp.id = 4;
  cp.job_id = "j";
  cp.operators["op"].parallelism = 1;
  cp.operators["op"].subtasks[0]["splits"] = {{1, "abc"}};
  ASSERT_TRUE(runtime::CheckpointStorage::write(dir + "/chk-4", cp).ok());
  auto read = runtime::CheckpointStorage::read(dir + "/chk-4");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->operators["op"].subtasks[0]["splits"][0].bytes, "abc");
  // Rewrite the metadata with a future format version.
  runtime::proto::CheckpointMetadata metadata;
  {
    std::ifstream in(dir + "/chk-4/_metadata", std::ios::binary);
    ASSERT_TRUE(metadata.ParseFromIstream(&in));
  }
  metadata.set_format_version(99);
  {
    std::ofstream out(dir + "/chk-4/_metadata", std::ios::binary | std::ios::trunc);
    ASSERT_TRUE(metadata.SerializeToOstream(&out));
  }
  read = runtime::CheckpointStorage::read(dir + "/chk-4");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(read.status().message()), HasSubstr("format version 99"));
}

TEST(CheckpointStorageTest, ADirectoryWithoutMetadataIsNotACheckpoint) {
  const std::string dir = TempDir("partial");
  fs::create_directories(dir + "/job/chk-7");
  std::ofstream(dir + "/job/chk-7/op-x-0.state") << "partial";
  runtime::CompletedCheckpoint cp;
  cp.id = 6;
  ASSERT_TRUE(runtime::CheckpointStorage::write(dir + "/job/chk-6", cp).ok());
  auto latest = runtime::CheckpointStorage::find_latest(dir);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(fs::path(*latest).filename(), "chk-6") << "chk-7 has no _metadata";
}

// A checkpoint with two state files and a known layout, for the corruption tests.
std::string WriteSmallCheckpoint(const std::string& dir) {
  runtime::CompletedCheckpoint cp;
  cp.id = 4;
  cp.job_id = "j";
  cp.operators["source"].parallelism = 1;
  cp.operators["source"].subtasks[0]["splits"] = {{1, std::string(200, 's')}};
  cp.operators["sink"].parallelism = 1;
  cp.operators["sink"].subtasks[0]["pending"] = {{1, std::string(200, 'p')}};
  EXPECT_TRUE(runtime::CheckpointStorage::write(dir + "/chk-4", cp).ok());
  return dir + "/chk-4";
}

// Changes `count` bytes in the middle of a file, keeping its size.
void FlipBytes(const std::string& path, int count) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekg(0, std::ios::end);
  const auto size = static_cast<std::int64_t>(f.tellg());
  for (int i = 0; i < count; ++i) {
    const std::int64_t at = size / 2 + i;
    f.seekg(at);
    char c = 0;
    f.get(c);
    f.seekp(at);
    f.put(static_cast<char>(c ^ 0x5a));
  }
}

TEST(CheckpointStorageTest, AStateFileChangedInPlaceFailsTheRestoreNamingTheFile) {
  // Three bytes changed, same size: the restore used to succeed and skip records silently.
  const std::string chk = WriteSmallCheckpoint(TempDir("crc-state"));
  ASSERT_TRUE(runtime::CheckpointStorage::read(chk).ok());
  const std::string file = chk + "/op-source-0.state";
  ASSERT_TRUE(fs::exists(file));
  FlipBytes(file, 3);
  auto read = runtime::CheckpointStorage::read(chk);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(read.status().message()), HasSubstr("op-source-0.state"));
  EXPECT_THAT(std::string(read.status().message()), HasSubstr("CRC-32"));
}

TEST(CheckpointStorageTest, AMetadataFileChangedInPlaceFailsTheRestore) {
  const std::string chk = WriteSmallCheckpoint(TempDir("crc-meta"));
  // Change a byte of a state file name recorded in _metadata (still a valid message).
  std::string bytes;
  {
    std::ifstream in(chk + "/_metadata", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto at = bytes.find("op-sink-0.state");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 3] = 'S';
  {
    std::ofstream out(chk + "/_metadata", std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  auto read = runtime::CheckpointStorage::read(chk);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(read.status().message()), HasSubstr("_metadata is corrupt"));
}

// A _metadata that is not a regular file (a directory, a FIFO whose read would block, a symlink
// to a device) or is larger than any metadata is damage, not a checkpoint still being written:
// it stays the restore point and reading it fails DATA_LOSS at once, instead of an older
// checkpoint (or none, and a fresh start) being taken silently, or the file being read whole.
TEST(CheckpointStorageTest, AMetadataThatIsNotARegularFileOrIsHugeIsDamage) {
  for (const std::string kind : {"directory", "fifo", "device", "huge"}) {
    const std::string root = TempDir("meta-" + kind);
    runtime::CompletedCheckpoint older;
    older.id = 3;
    ASSERT_TRUE(runtime::CheckpointStorage::write(root + "/job/chk-3", older).ok());
    const std::string chk = WriteSmallCheckpoint(root + "/job");
    const std::string metadata = chk + "/_metadata";
    fs::remove(metadata);
    if (kind == "directory") {
      fs::create_directory(metadata);
    } else if (kind == "fifo") {
      ASSERT_EQ(mkfifo(metadata.c_str(), 0600), 0);
    } else if (kind == "device") {
      fs::create_symlink("/dev/zero", metadata);
    } else {
      std::ofstream(metadata).put('x');
      fs::resize_file(metadata, (64ULL << 20) + 1);  // sparse: nothing is written
    }
    auto latest = runtime::CheckpointStorage::find_latest(root);
    ASSERT_TRUE(latest.ok()) << kind << ": " << latest.status();
    EXPECT_EQ(fs::path(*latest).filename(), "chk-4") << kind;
    auto read = runtime::CheckpointStorage::read(chk);
    ASSERT_FALSE(read.ok()) << kind;
    EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss) << kind << ": " << read.status();
    EXPECT_THAT(std::string(read.status().message()), HasSubstr("_metadata")) << kind;
  }
  // A state file is held to the same rules, and to the size its checkpoint recorded.
  const std::string chk = WriteSmallCheckpoint(TempDir("state-fifo"));
  const std::string state = chk + "/op-source-0.state";
  fs::remove(state);
  ASSERT_EQ(mkfifo(state.c_str(), 0600), 0);
  auto fifo = runtime::CheckpointStorage::read(chk);
  EXPECT_EQ(fifo.status().code(), absl::StatusCode::kDataLoss) << fifo.status();
  EXPECT_THAT(std::string(fifo.status().message()), HasSubstr("not a regular file"));
  const std::string grown = WriteSmallCheckpoint(TempDir("state-grown"));
  fs::resize_file(grown + "/op-sink-0.state", 1ULL << 30);  // sparse
  auto big = runtime::CheckpointStorage::read(grown);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kDataLoss) << big.status();
  EXPECT_THAT(std::string(big.status().message()), HasSubstr("op-sink-0.state is corrupt"));
}

TEST(CheckpointStorageTest, RetentionCoversEveryCheckpointOfTheJobFolderAndDeadLeftovers) {
  // A restored job continues in its folder: chk-4 of the first run must not outlive retention,
  // nor the incomplete chk-5 a killed attempt left behind.
  const std::string job = TempDir("retention") + "/job";
  runtime::CompletedCheckpoint cp;
  for (int id : {3, 4, 44, 45}) {
    cp.id = id;
    ASSERT_TRUE(runtime::CheckpointStorage::write(job + "/chk-" + std::to_string(id), cp).ok());
  }
  fs::create_directories(job + "/chk-5");  // incomplete, dead
  std::ofstream(job + "/chk-5/op-x-0.state") << "partial";
  fs::create_directories(job + "/chk-46");  // incomplete, being written now
  fs::create_directories(job + "/savepoint-1");
  auto removed = runtime::CheckpointStorage::apply_retention(job, 45, 1);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(removed->size(), 4u);
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(job)) left.insert(e.path().filename().string());
  EXPECT_EQ(left, (std::set<std::string>{"chk-45", "chk-46", "savepoint-1"}));
  removed = runtime::CheckpointStorage::apply_retention(job, 45, 1);
  ASSERT_TRUE(removed.ok());
  EXPECT_TRUE(removed->empty()) << "idempotent";
}

TEST(StateRedistributionTest, SplitsListsEvenlyAndBroadcastsBroadcastLists) {
  runtime::CompletedCheckpoint::OperatorState state;
  state.parallelism = 2;
  state.subtasks[0]["splits"] = {{1, "a"}, {1, "b"}, {1, "c"}};
  state.subtasks[1]["splits"] = {{1, "d"}};
  state.subtasks[0]["broadcast:keyed"] = {{1, "k0"}};
  state.subtasks[1]["broadcast:keyed"] = {{1, "k1"}};
  state.subtasks[runtime::kCoordinatorSubtask]["enumerator-state"] = {{1, "e"}};
  auto three = runtime::Redistribute(state, 3);
  ASSERT_EQ(three.size(), 4u);  // three subtasks + coordinator
  std::vector<std::string> all;
  for (int i = 0; i < 3; ++i) {
    const auto& splits = three[i].list("splits");
    EXPECT_GE(splits.size(), 1u);
    for (const auto& e : splits) all.push_back(e.bytes);
    EXPECT_EQ(three[i].list("broadcast:keyed").size(), 2u);
  }
  EXPECT_EQ(all, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(three[runtime::kCoordinatorSubtask].list("enumerator-state")[0].bytes, "e");
  auto one = runtime::Redistribute(state, 1);
  EXPECT_EQ(one[0].list("splits").size(), 4u);
}

// A restart continues from whichever complete checkpoint or savepoint was taken last (as its
// _metadata records), and ignores incomplete ones (no _metadata).
TEST(CheckpointStorageTest, RestorePointIsTheNewestCompleteCheckpointOrSavepoint) {
  const fs::path base = TempDir("restore-point");
  const fs::path checkpoints = base / "checkpoints";
  const fs::path savepoints = base / "savepoints";
  const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
  auto make = [&](const fs::path& dir, bool complete, std::chrono::seconds age) {
    fs::create_directories(dir);
    if (!complete) return;
    runtime::CompletedCheckpoint cp;
    cp.id = 1;
    cp.job_id = "job";
    cp.timestamp_ms = now_ms - std::chrono::duration_cast<std::chrono::milliseconds>(age).count();
    ASSERT_TRUE(runtime::CheckpointStorage::write(dir.string(), cp).ok());
  };
  EXPECT_EQ(
      runtime::CheckpointStorage::find_restore_point(checkpoints.string(), savepoints.string())
          .status()
          .code(),
      absl::StatusCode::kNotFound);
  make(checkpoints / "job" / "chk-3", true, std::chrono::seconds(30));
  make(savepoints / "savepoint-a-2", true, std::chrono::seconds(60));
  auto point =
      runtime::CheckpointStorage::find_restore_point(checkpoints.string(), savepoints.string());
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(fs::path(*point).filename(), "chk-3");
  make(savepoints / "savepoint-b-4", true, std::chrono::seconds(10));
  make(savepoints / "savepoint-c-5", false, std::chrono::seconds(0));  // incomplete: never chosen
  point = runtime::CheckpointStorage::find_restore_point(checkpoints.string(), savepoints.string());
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(fs::path(*point).filename(), "savepoint-b-4");
  fs::remove_all(base);
}

}  // namespace
}  // namespace gcpstream
