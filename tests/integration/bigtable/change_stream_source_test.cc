// BigtableChangeStreamSource against the change-stream fake (tests/fakes/bigtable_change_streams):
// the Bigtable emulator cannot serve change streams. Mutations are written through MutateRows
// on the fake while its partitions split and merge under the running job.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "absl/strings/numbers.h"
#include "gcpstream/bigtable/changestream/bigtable_change_stream_source.h"
#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/job_runner.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "tests/fakes/bigtable_change_streams.h"
#include "tests/support/running_job.h"

namespace gcpstream::bigtable {
namespace {

using namespace std::chrono_literals;
using testing::BigtableChangeStreamsFake;
using ::testing::HasSubstr;
using testing::RunningJob;

constexpr char kTable[] = "projects/p/instances/i/tables/t";

// One delivered mutation as the test's deserializer renders it.
struct Change {
  std::string row;
  std::int64_t seq = 0;  // the value the writer put in the cell: its order per row
  int entries = 0;
};

struct Seen {
  std::mutex mu;
  std::vector<Change> changes;
  void add(Change c) {
    std::lock_guard lock(mu);
    changes.push_back(std::move(c));
  }
  std::size_t total() {
    std::lock_guard lock(mu);
    return changes.size();
  }
  std::set<std::pair<std::string, std::int64_t>> distinct() {
    std::lock_guard lock(mu);
    std::set<std::pair<std::string, std::int64_t>> out;
    for (const auto& c : changes) out.emplace(c.row, c.seq);
    return out;
  }
};

class BigtableChangeStreamSourceIT : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fake = BigtableChangeStreamsFake::Start();
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = *std::move(fake);
    fake_->add_table(kTable);
    started_ = absl::Now() - absl::Seconds(1);
  }

  static google::bigtable::v2::Mutation Cell(const std::string& family,
                                             const std::string& qualifier,
                                             const std::string& value) {
    google::bigtable::v2::Mutation m;
    auto* c = m.mutable_set_cell();
    c->set_family_name(family);
    c->set_column_qualifier(qualifier);
    c->set_timestamp_micros(-1);
    c->set_value(value);
    return m;
  }

  void Write(const std::string& row, std::int64_t seq) {
    ASSERT_TRUE(fake_->append(kTable, row, {Cell("f", "seq", std::to_string(seq))}).ok());
  }

  ChangeStreamMutationDeserializer<Change> Deserializer() {
    return [](const BigtableChangeStreamMutation& m, Collector<Change>& out) -> absl::Status {
      Change c{m.row_key(), -1, static_cast<int>(m.entries().size())};
      for (const auto& e : m.entries()) {
        if (auto* set = std::get_if<SetCellEntry>(&e); set && set->qualifier == "seq") {
          if (!absl::SimpleAtoi(set->value, &c.seq)) {
            return absl::InvalidArgumentError("not a number");
          }
        }
      }
      out.collect(std::move(c));
      return absl::OkStatus();
    };
  }

  BigtableChangeStreamSource<Change>::Builder Source() {
    auto b = BigtableChangeStreamSource<Change>::builder();
    b.table(connector::TableDestination::of("p", "i", "t"))
        .app_profile_id("cdc")
        .deserializer(Deserializer())
        .start_position(connector::StartPosition::absolute(started_))
        .heartbeat_for_tests(200ms)
        .emulator_endpoint(fake_->endpoint());
    return b;
  }

  std::unique_ptr<RunningJob> Job(std::shared_ptr<BigtableChangeStreamSource<Change>> source,
                                  std::shared_ptr<Seen> seen, int parallelism,
                                  std::function<void(StreamExecutionEnvironment&)> configure = {},
                                  std::function<Change(const Change&)> map = {}) {
    StreamExecutionEnvironment env;
    env.set_parallelism(parallelism);
    env.enable_checkpointing(200ms);
    if (configure) configure(env);
    auto stream = env.from_source(source, WatermarkStrategy<Change>::no_watermarks(), "changes");
    if (map) stream = stream.map(map, "map");
    stream.sink_to(std::make_shared<ForEachSink<Change>>([seen](const Change& c) { seen->add(c); }),
                   "seen");
    auto job = std::make_unique<RunningJob>();
    job->runner = env.create_runner("bigtable-change-stream-it");
    job->start();
    return job;
  }

  // Waits until every (row, seq) written arrived; fails naming what is missing.
  void AwaitAll(Seen& seen, const std::map<std::string, std::int64_t>& last_seq,
                std::chrono::seconds timeout = 60s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::size_t missing = 0;
    std::string first;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto got = seen.distinct();
      missing = 0;
      first.clear();
      for (const auto& [row, last] : last_seq) {
        for (std::int64_t s = 0; s <= last; ++s) {
          if (got.count({row, s}) == 0) {
            if (first.empty()) first = row + "#" + std::to_string(s);
            ++missing;
          }
        }
      }
      if (missing == 0) return;
      std::this_thread::sleep_for(50ms);
    }
    FAIL() << missing << " mutations never arrived (first: " << first
           << "); arrived: " << seen.total();
  }

  // Per row, first arrivals come in the order they were written (one row lives in one
  // partition at a time, and a partition keeps commit order).
  void ExpectOrderedPerRow(Seen& seen, bool allow_replay) {
    std::lock_guard lock(seen.mu);
    std::map<std::string, std::int64_t> last;
    std::set<std::pair<std::string, std::int64_t>> arrived;
    int backwards = 0, repeats = 0;
    for (const auto& c : seen.changes) {
      if (!arrived.emplace(c.row, c.seq).second) {
        ++repeats;
        continue;
      }
      auto it = last.find(c.row);
      if (it != last.end() && c.seq < it->second) ++backwards;
      last[c.row] = c.seq;
    }
    EXPECT_EQ(backwards, 0) << "mutations of one row arrived out of commit order";
    if (!allow_replay) {
      EXPECT_EQ(repeats, 0) << "mutations repeated in a run without failure";
    }
  }

  // `n` mutations over 26 rows "a…" to "z…", with the topology changing as they are written.
  // Continues from `last` (the last seq written per row), returns the new last ones.
  std::map<std::string, std::int64_t> Workload(int n, const std::function<void(int)>& at = {},
                                               std::map<std::string, std::int64_t> last = {}) {
    for (int i = 0; i < n; ++i) {
      const std::string row = std::string(1, static_cast<char>('a' + i % 26)) + "-row";
      const std::int64_t seq = last.count(row) ? last[row] + 1 : 0;
      Write(row, seq);
      last[row] = seq;
      if (at) at(i);
      if (i % 500 == 499) std::this_thread::sleep_for(100ms);
    }
    return last;
  }

  std::unique_ptr<BigtableChangeStreamsFake> fake_;
  absl::Time started_;
};

TEST_F(BigtableChangeStreamSourceIT, TenThousandMutationsArriveWhilePartitionsSplitAndMergeTwice) {
  auto source = Source().max_concurrent_streams_per_subtask(2).build();
  ASSERT_TRUE(source.ok()) << source.status();
  auto seen = std::make_shared<Seen>();
  auto job = Job(*source, seen, 2);
  const auto last = Workload(10'000, [&](int i) {
    if (i == 1500) {
      ASSERT_TRUE(fake_->split_at("h").ok());
    }
    if (i == 3000) {
      ASSERT_TRUE(fake_->split_at("q").ok());
    }
    if (i == 4500) {
      ASSERT_TRUE(fake_->merge_at("h").ok());
    }
    if (i == 6000) {
      ASSERT_TRUE(fake_->repartition({"d", "m", "t"}).ok());
    }
    if (i == 8000) {
      ASSERT_TRUE(fake_->repartition({"m"}).ok());
    }
  });
  AwaitAll(*seen, last);
  ExpectOrderedPerRow(*seen, /*allow_replay=*/false);
  job->runner->cancel();
  const auto result = job->finish();
  EXPECT_EQ(result.status.code(), absl::StatusCode::kCancelled) << result.status;
  EXPECT_GE(result.metric("changes", "changeStreamPartitionSplits"), 3);
  EXPECT_GE(result.metric("changes", "changeStreamPartitionMerges"), 2);
  EXPECT_EQ(result.metric("changes", "changeStreamMutationsRead"), 10'000);
  std::printf("%.0f partitions assigned, %.0f splits, %.0f merges, %zu mutations delivered\n",
              result.metric("changes", "splitsAssigned"),
              result.metric("changes", "changeStreamPartitionSplits"),
              result.metric("changes", "changeStreamPartitionMerges"), seen->total());
}

// More partitions than stream slots: the waiting ones get their turn at heartbeats, so none is
// left unread.
TEST_F(BigtableChangeStreamSourceIT, PartitionsBeyondTheStreamLimitTakeTurns) {
  ASSERT_TRUE(fake_->repartition({"d", "h", "m", "q", "u"}).ok());
  auto source = Source().max_concurrent_streams_per_subtask(1).build();
  ASSERT_TRUE(source.ok()) << source.status();
  auto seen = std::make_shared<Seen>();
  auto job = Job(*source, seen, 1);
  const auto last = Workload(260);
  AwaitAll(*seen, last, 30s);
  ExpectOrderedPerRow(*seen, /*allow_replay=*/false);
  job->runner->cancel();
  const auto result = job->finish();
  // Calls never end by themselves here: six partitions through one slot were read only because
  // each call made way at a heartbeat.
  EXPECT_GE(result.metric("changes", "changeStreamReadsStarted"), 6)
      << "six partitions through one slot need rotations";
}

// A service that sends no heartbeat while partitions are busy: queued partitions still get their
// turn, because an open call also makes way at a complete mutation once it has been open for
// two heartbeat intervals.
TEST_F(BigtableChangeStreamSourceIT, BusyPartitionsWithoutHeartbeatsStillTakeTurns) {
  ASSERT_TRUE(fake_->repartition({"h", "q"}).ok());
  testing::BigtableChangeStreamsFakeOptions options;
  options.pause_heartbeats = true;
  fake_->set_options(options);
  auto source = Source().max_concurrent_streams_per_subtask(1).build();
  ASSERT_TRUE(source.ok()) << source.status();
  auto seen = std::make_shared<Seen>();
  auto job = Job(*source, seen, 1);
  std::map<std::string, std::int64_t> last;
  // Every partition stays busy for about three seconds, without a heartbeat.
  for (int round = 0; round < 60; ++round) {
    last = Workload(26, {}, std::move(last));
    std::this_thread::sleep_for(50ms);
  }
  // Meanwhile each of the three partitions had turns through the one slot.
  {
    std::set<std::string> rows;
    for (const auto& [row, seq] : seen->distinct()) rows.insert(row);
    for (const char* row : {"a-row", "h-row", "q-row"}) {
      EXPECT_EQ(rows.count(row), 1u) << row << " never arrived while partitions were busy";
    }
  }
  // An idle partition sends heartbeats again, so whatever is left arrives.
  fake_->set_options({});
  AwaitAll(*seen, last, 30s);
  ExpectOrderedPerRow(*seen, /*allow_replay=*/false);
  job->runner->cancel();
  const auto result = job->finish();
  EXPECT_GE(result.metric("changes", "changeStreamReadsStarted"), 3);
}

// Partitions that split and merge faster than queued partitions get their turn: a successor
// goes to the reader whose partition just closed, ahead of its queue and into the slot it left,
// so a partition is followed through the changes instead of going stale in a queue over and over.
TEST_F(BigtableChangeStreamSourceIT, FrequentTopologyChangesLeaveNoPartitionUnread) {
  ASSERT_TRUE(fake_->repartition({"g", "p"}).ok());
  auto source = Source().max_concurrent_streams_per_subtask(1).heartbeat_for_tests(1s).build();
  ASSERT_TRUE(source.ok()) << source.status();
  auto seen = std::make_shared<Seen>();
  auto job = Job(*source, seen, 2);
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    for (bool split = true; !stop.load(); split = !split) {
      (void)(split ? fake_->split_at("m") : fake_->merge_at("m"));
      std::this_thread::sleep_for(150ms);
    }
  });
  std::map<std::string, std::int64_t> last;
  for (int round = 0; round < 20; ++round) {
    last = Workload(26, {}, std::move(last));
    std::this_thread::sleep_for(100ms);
  }
  AwaitAll(*seen, last, 30s);
  stop = true;
  churn.join();
  ExpectOrderedPerRow(*seen, /*allow_replay=*/false);
  job->runner->cancel();
  job->finish();
}

// A call that receives nothing at all (no heartbeat either: a stalled network or service) is
// cancelled after four heartbeat intervals and opened again, and the partition goes on.
TEST_F(BigtableChangeStreamSourceIT, ASilentCallIsCancelledAndOpenedAgain) {
  testing::BigtableChangeStreamsFakeOptions options;
  options.pause_heartbeats = true;
  fake_->set_options(options);
  auto source = Source().build();
  ASSERT_TRUE(source.ok()) << source.status();
  auto seen = std::make_shared<Seen>();
  auto job = Job(*source, seen, 1);
  std::this_thread::sleep_for(5s);  // silent: the 2 s stall limit passes twice
  Write("a-row", 0);
  AwaitAll(*seen, {{"a-row", 0}}, 20s);
  job->runner->cancel();
  const auto result = job->finish();
  EXPECT_GE(result.metric("changes", "changeStreamReadsStarted"), 2)
      << "the silent call was never opened again";
}

TEST_F(BigtableChangeStreamSourceIT, NothingIsLostAcrossAFailureAndARestore) {
  auto source = Source().build();
  ASSERT_TRUE(source.ok()) << source.status();
  auto seen = std::make_shared<Seen>();
  auto failed = std::make_shared<std::atomic<bool>>(false);
  auto passed = std::make_shared<std::atomic<int>>(0);
  auto job = Job(
      *source, seen, 2,
      [](StreamExecutionEnvironment& env) {
        env.config().restart_strategy.kind = runtime::RestartStrategyKind::kFixedDelay;
        env.config().restart_strategy.max_attempts = 2;
        env.config().restart_strategy.delay = 10ms;
      },
      [failed, passed](const Change& c) -> Change {
        if (passed->fetch_add(1) == 1200 && !failed->exchange(true)) {
          throw std::runtime_error("injected failure");
        }
        return c;
      });
  const auto last = Workload(3000, [&](int i) {
    if (i == 1000) {
      ASSERT_TRUE(fake_->split_at("m").ok());
    }
    if (i == 2000) {
      ASSERT_TRUE(fake_->merge_at("m").ok());
    }
  });
  AwaitAll(*seen, last);
  EXPECT_TRUE(failed->load()) << "the injected failure never happened";
  ExpectOrderedPerRow(*seen, /*allow_replay=*/true);
  job->runner->cancel();
  job->finish();
}

// A stream cut in the middle of a chunked change is opened again from the last complete
// change's token: the change arrives whole, once.
TEST_F(BigtableChangeStreamSourceIT, AStreamCutMidChangeResumesAndDeliversTheChangeWhole) {
  auto source = Source().build();
  ASSERT_TRUE(source.ok()) << source.status();
  auto seen = std::make_shared<Seen>();
  auto job = Job(*source, seen, 1);
  Write("a-row", 0);
  AwaitAll(*seen, {{"a-row", 0}}, 20s);
  testing::BigtableChangeStreamsFakeOptions options;
  options.max_value_chunk_bytes = 2;
  options.cut_next_chunked_change = true;
  fake_->set_options(options);
  ASSERT_TRUE(
      fake_->append(kTable, "a-row", {Cell("f", "seq", "1"), Cell("f", "pad", "xxxxx")}).ok());
  AwaitAll(*seen, {{"a-row", 1}}, 20s);
  job->runner->cancel();
  job->finish();
  std::lock_guard lock(seen->mu);
  ASSERT_EQ(seen->changes.size(), 2u);
  EXPECT_EQ(seen->changes[1].entries, 2);
}

// Family and qualifier filters project entries before the deserializer; a mutation left with
// no entry is delivered empty by default, and skipped with skip_messages_without_change.
TEST_F(BigtableChangeStreamSourceIT, FiltersProjectEntriesAndCanSkipEmptiedMutations) {
  for (bool skip : {false, true}) {
    SCOPED_TRACE(skip ? "skip" : "deliver");
    SetUp();
    ChangeStreamEntryFilterOptions filters;
    filters.family_include = {"f"};
    filters.qualifier_exclude = {"f:cGFk"};  // "pad"
    filters.skip_messages_without_change = skip;
    auto source = Source().filters(filters).build();
    ASSERT_TRUE(source.ok()) << source.status();
    auto seen = std::make_shared<Seen>();
    auto job = Job(*source, seen, 1);
    ASSERT_TRUE(
        fake_
            ->append(kTable, "a-row",
                     {Cell("f", "seq", "0"), Cell("f", "pad", "x"), Cell("g", "other", "y")})
            .ok());
    ASSERT_TRUE(fake_->append(kTable, "b-row", {Cell("g", "only", "y")}).ok());
    Write("c-row", 0);
    AwaitAll(*seen, {{"a-row", 0}, {"c-row", 0}}, 20s);
    job->runner->cancel();
    const auto result = job->finish();
    std::lock_guard lock(seen->mu);
    std::map<std::string, int> entries;
    for (const auto& c : seen->changes) entries[c.row] = c.entries;
    EXPECT_EQ(entries["a-row"], 1);
    if (skip) {
      EXPECT_EQ(entries.count("b-row"), 0u);
      EXPECT_EQ(result.metric("changes", "changeStreamRecordsSkippedWithoutChange"), 1);
    } else {
      ASSERT_EQ(entries.count("b-row"), 1u);
      EXPECT_EQ(entries["b-row"], 0);
    }
    EXPECT_EQ(result.metric("changes", "changeStreamMutationEntriesFiltered"), 3);
  }
}

// With an end time the source is bounded: the job finishes by itself once every partition has
// passed it — not before, even while a partition is split.
TEST_F(BigtableChangeStreamSourceIT, AnEndTimeMakesTheSourceBoundedAndItFinishesAfterIt) {
  const absl::Time end = absl::Now() + absl::Seconds(2);
  auto source = Source().end_time(end).build();
  ASSERT_TRUE(source.ok()) << source.status();
  auto seen = std::make_shared<Seen>();
  auto job = Job(*source, seen, 2);
  const auto last = Workload(200, [&](int i) {
    if (i == 100) {
      ASSERT_TRUE(fake_->split_at("m").ok());
    }
  });
  const auto result = job->finish();
  EXPECT_TRUE(result.status.ok()) << result.status;
  EXPECT_GE(absl::Now(), end) << "the job finished before the end time";
  const auto got = seen->distinct();
  for (const auto& [row, n] : last) {
    for (std::int64_t s = 0; s <= n; ++s) EXPECT_EQ(got.count({row, s}), 1u) << row << "#" << s;
  }
}

// A restore whose checkpointed positions fell out of the table's change stream retention (the
// clocks of the fake and the coordinator jump two hours past a one-hour retention while the job
// runs) fails with FAILED_PRECONDITION naming resume_fallback; with resume_fallback the job
// starts the partitions over there, and what is written afterwards arrives.
TEST_F(BigtableChangeStreamSourceIT, ARestoreOutsideTheRetentionFailsUnlessResumeFallbackIsSet) {
  for (bool fallback : {false, true}) {
    SCOPED_TRACE(fallback ? "resume_fallback" : "no fallback");
    SetUp();
    auto offset = std::make_shared<std::atomic<std::int64_t>>(0);  // seconds ahead
    auto clock = [offset] { return absl::Now() + absl::Seconds(offset->load()); };
    testing::BigtableChangeStreamsFakeOptions options;
    options.retention = absl::Hours(1);
    options.clock = clock;
    fake_->set_options(options);
    auto builder = Source().clock(clock);
    if (fallback) builder.resume_fallback(connector::StartPosition::latest());
    auto source = builder.build();
    ASSERT_TRUE(source.ok()) << source.status();
    auto seen = std::make_shared<Seen>();
    auto fail = std::make_shared<std::atomic<bool>>(false);
    auto job = Job(
        *source, seen, 1,
        [](StreamExecutionEnvironment& env) {
          env.config().restart_strategy.kind = runtime::RestartStrategyKind::kFixedDelay;
          env.config().restart_strategy.max_attempts = 1;
          env.config().restart_strategy.delay = 10ms;
        },
        [fail](const Change& c) -> Change {
          if (fail->exchange(false)) throw std::runtime_error("injected failure");
          return c;
        });
    auto last = Workload(100);
    AwaitAll(*seen, last, 20s);
    const std::int64_t after_data = job->latest_checkpoint();
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (job->latest_checkpoint() < after_data + 2 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    ASSERT_GE(job->latest_checkpoint(), after_data + 2) << "no checkpoint after the data";
    offset->store(2 * 3600);
    fail->store(true);
    last = Workload(1, {}, std::move(last));  // its record fails the job: a restore follows
    if (!fallback) {
      const auto result = job->finish();
      EXPECT_EQ(result.status.code(), absl::StatusCode::kFailedPrecondition) << result.status;
      EXPECT_THAT(result.status.message(), HasSubstr("resume_fallback"));
      EXPECT_THAT(result.status.message(), HasSubstr("retention"));
      continue;
    }
    // Restored at the fallback position: what is written from then on arrives.
    const auto restarted_by = std::chrono::steady_clock::now() + 20s;
    while (job->runner->status().snapshot().restarts < 1 &&
           std::chrono::steady_clock::now() < restarted_by) {
      std::this_thread::sleep_for(20ms);
    }
    ASSERT_GE(job->runner->status().snapshot().restarts, 1) << "the job never restarted";
    std::this_thread::sleep_for(500ms);
    std::map<std::string, std::int64_t> later;
    for (char c = 'a'; c <= 'z'; ++c) later[std::string(1, c) + "-row"] = 999;
    later = Workload(52, {}, later);  // 1000 and 1001 on every row
    const auto wait_until = std::chrono::steady_clock::now() + 20s;
    std::size_t missing = 1;
    while (missing > 0 && std::chrono::steady_clock::now() < wait_until) {
      const auto got = seen->distinct();
      missing = 0;
      for (const auto& [row, seq] : later) {
        missing += got.count({row, 1000}) == 0 ? 1 : 0;
        missing += got.count({row, 1001}) == 0 ? 1 : 0;
      }
      std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(missing, 0u) << "mutations written after the fallback restore never arrived";
    job->runner->cancel();
    job->finish();
  }
}

TEST_F(BigtableChangeStreamSourceIT, AMissingTableFailsTheJobWithNotFound) {
  auto source = Source().table(connector::TableDestination::of("p", "i", "nope")).build();
  ASSERT_TRUE(source.ok()) << source.status();
  auto seen = std::make_shared<Seen>();
  auto job = Job(*source, seen, 1);
  const auto result = job->finish();
  EXPECT_EQ(result.status.code(), absl::StatusCode::kNotFound) << result.status;
  EXPECT_THAT(result.status.message(), HasSubstr("tables/nope"));
}

}  // namespace
}  // namespace gcpstream::bigtable
