// The checkpoint-owned (staged) Bigtable sink: the envelope request it stages, the committable
// serializer, the interval caps, and whole jobs against an in-memory CheckAndMutateRow that
// evaluates the staged predicate like the service (a filter chain over the row's cells, RE2 full
// matches) — including failures after the row was applied, whose replay the markers absorb.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "gcpstream/bigtable/staged/bigtable_staged_sink.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "re2/re2.h"

namespace gcpstream::bigtable {
namespace {

namespace v2 = google::bigtable::v2;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr char kTable[] = "projects/p/instances/i/tables/t";

// Rows of marker cells and INT64 sums, changed only through CheckAndMutateRow. The predicate is
// evaluated as Bigtable evaluates a chain of family and qualifier regex filters: it matches when
// some cell of the row passes every filter. Failures can be injected before the row is changed
// or after (the answer lost). Thread-safe.
class MarkerTable final : public BigtableDataStub {
 public:
  struct Failure {
    absl::Status status;
    bool after_apply = false;
  };

  std::function<void()> async_mutate_rows(std::shared_ptr<const v2::MutateRowsRequest>,
                                          std::chrono::milliseconds,
                                          std::function<void(MutateRowsResult)> done) override {
    MutateRowsResult r;
    r.rpc = absl::UnimplementedError("not here");
    done(std::move(r));
    return [] {};
  }

  std::function<void()> async_check_and_mutate_row(
      std::shared_ptr<const v2::CheckAndMutateRowRequest> request, std::chrono::milliseconds,
      std::function<void(absl::StatusOr<v2::CheckAndMutateRowResponse>)> done) override {
    std::optional<Failure> failure;
    v2::CheckAndMutateRowResponse response;
    {
      std::lock_guard lock(mu_);
      ++calls_;
      auto f = failures_.find(calls_);
      if (f != failures_.end()) failure = f->second;
      if (failure && !failure->after_apply) {
        // not applied
      } else {
        response.set_predicate_matched(matches(*request));
        const auto& branch =
            response.predicate_matched() ? request->true_mutations() : request->false_mutations();
        for (const auto& m : branch) apply(request->row_key(), m);
      }
    }
    // Answer from another thread, as gRPC does.
    std::thread([done = std::move(done), failure, response]() mutable {
      if (failure) {
        done(failure->status);
      } else {
        done(response);
      }
    }).detach();
    return [] {};
  }

  void fail_call(int n, Failure failure) {
    std::lock_guard lock(mu_);
    failures_[n] = std::move(failure);
  }
  std::int64_t sum(const std::string& row) {
    std::lock_guard lock(mu_);
    return sums_[row];
  }
  std::size_t markers() {
    std::lock_guard lock(mu_);
    std::size_t n = 0;
    for (const auto& [row, cells] : cells_) n += cells.size();
    return n;
  }
  int calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  bool matches(const v2::CheckAndMutateRowRequest& r) {
    const auto& filters = r.predicate_filter().chain().filters();
    for (const auto& [family, qualifier] : cells_[r.row_key()]) {
      bool pass = true;
      for (const auto& f : filters) {
        if (f.has_family_name_regex_filter()) {
          pass = pass && RE2::FullMatch(family, f.family_name_regex_filter());
        } else if (f.has_column_qualifier_regex_filter()) {
          pass = pass && RE2::FullMatch(qualifier, f.column_qualifier_regex_filter());
        }
      }
      if (pass) return true;
    }
    return false;
  }
  void apply(const std::string& row, const v2::Mutation& m) {
    if (m.has_set_cell()) {
      cells_[row].insert({m.set_cell().family_name(), m.set_cell().column_qualifier()});
    } else if (m.has_add_to_cell()) {
      sums_[row] += m.add_to_cell().input().int_value();
    }
  }

  std::mutex mu_;
  int calls_ = 0;
  std::map<int, Failure> failures_;
  std::map<std::string, std::set<std::pair<std::string, std::string>>> cells_;
  std::map<std::string, std::int64_t> sums_;
};

RowMutationEntry Counter(std::int64_t n) {
  RowMutationEntry e("counter#" + std::to_string(n % 10));
  e.add_to_cell("sums", "n", 0, AggregateValue::int64(n));
  return e;
}

TEST(StagedEnvelopeTest, TheRequestAppliesTheEntryAndItsMarkerOnlyWhenTheMarkerIsAbsent) {
  RowMutationEntry entry("row-1");
  entry.set_cell("cf", "q", 5000, "v").add_to_cell("sums", "n", 0, AggregateValue::int64(3));
  auto bytes = BuildStagedRequest(kTable, "tx", "flink_commit", entry, "abc.1", 1'234'567);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  v2::CheckAndMutateRowRequest r;
  ASSERT_TRUE(r.ParseFromString(*bytes));
  EXPECT_EQ(r.table_name(), kTable);
  EXPECT_EQ(r.app_profile_id(), "tx");
  EXPECT_EQ(r.row_key(), "row-1");
  ASSERT_EQ(r.predicate_filter().chain().filters_size(), 3);
  EXPECT_EQ(r.predicate_filter().chain().filters(0).family_name_regex_filter(), "flink_commit");
  EXPECT_EQ(r.predicate_filter().chain().filters(1).column_qualifier_regex_filter(), "abc\\.1")
      << "the identity is matched literally";
  EXPECT_EQ(r.true_mutations_size(), 0) << "a replay writes nothing";
  ASSERT_EQ(r.false_mutations_size(), 3);
  EXPECT_EQ(r.false_mutations(2).set_cell().family_name(), "flink_commit");
  EXPECT_EQ(r.false_mutations(2).set_cell().column_qualifier(), "abc.1");
  EXPECT_EQ(r.false_mutations(2).set_cell().timestamp_micros(), 1'234'000);
}

TEST(StagedEnvelopeTest, EntriesThatWouldBreakReplayProtectionAreRefused) {
  RowMutationEntry whole("r");
  whole.delete_row();
  auto refused = BuildStagedRequest(kTable, "tx", "m", whole, "id", 0);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("whole-row delete"));
  RowMutationEntry marker("r");
  marker.set_cell("m", "x", 0, "forged");
  EXPECT_THAT(BuildStagedRequest(kTable, "tx", "m", marker, "id", 0).status().message(),
              HasSubstr("marker family 'm'"));
  RowMutationEntry big("r");
  for (int i = 0; i < kMaxStagedMutations + 1; ++i) big.set_cell("cf", "q", 0, "v");
  EXPECT_THAT(BuildStagedRequest(kTable, "tx", "m", big, "id", 0).status().message(),
              HasSubstr("at most 99999"));
  EnvelopeIdentities ids;
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(ids.next());
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(ids.next().size(), 32u);
}

TEST(StagedEnvelopeTest, BatchesRoundTripAndCorruptionIsDataLoss) {
  auto one = BuildStagedRequest(kTable, "tx", "m", Counter(7), "id-1", 0);
  ASSERT_TRUE(one.ok());
  StagedBatch batch{{*one, *one}};
  StagedBatchSerializer serializer;
  auto bytes = serializer.serialize(batch);
  ASSERT_TRUE(bytes.ok());
  auto back = serializer.deserialize(1, *bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, batch);
  EXPECT_EQ(serializer.deserialize(2, *bytes).status().code(),
            absl::StatusCode::kFailedPrecondition);
  for (std::size_t cut = 0; cut < bytes->size(); cut += 7) {
    EXPECT_EQ(serializer.deserialize(1, bytes->substr(0, cut)).status().code(),
              absl::StatusCode::kDataLoss)
        << cut;
  }
  util::ByteWriter junk;
  junk.put_u32(1);
  junk.put_string("not a request at all \xff\xff\xff");
  EXPECT_EQ(serializer.deserialize(1, junk.take()).status().code(), absl::StatusCode::kDataLoss);
}

BigtableStagedSink<std::int64_t>::Builder Builder(std::shared_ptr<MarkerTable> table,
                                                  BigtableStagedOptions options = {}) {
  if (options.marker_family.empty()) options.marker_family = "flink_commit";
  auto b = BigtableStagedSink<std::int64_t>::builder();
  b.table(connector::TableDestination::of("p", "i", "t"))
      .app_profile_id("tx")
      .staged_options(options)
      .data_stub(table)
      .target_validator([](const std::string&, const std::string&) { return absl::OkStatus(); })
      .serializer(BigtableSerializationSchema<std::int64_t>::of(
          [](const std::int64_t& n, const SinkWriterContext&) -> std::optional<RowMutationEntry> {
            if (n % 100 == 99) return std::nullopt;  // skipped
            return Counter(n);
          }));
  return b;
}

// The expected sum of counter#k over 0..n-1 without the skipped inputs.
std::int64_t Expected(int k, int n) {
  std::int64_t sum = 0;
  for (int i = 0; i < n; ++i) {
    if (i % 10 == k && i % 100 != 99) sum += i;
  }
  return sum;
}

TEST(BigtableStagedSinkTest, BuilderNamesWhatIsMissing) {
  auto table = std::make_shared<MarkerTable>();
  auto message = [](auto b) { return std::string(b.build().status().message()); };
  EXPECT_THAT(message(Builder(table).app_profile_id("")), HasSubstr("app_profile_id"));
  BigtableStagedOptions no_marker;
  no_marker.marker_family = "";
  auto b = Builder(table);
  b.staged_options(no_marker);
  EXPECT_THAT(message(b), HasSubstr("marker_family"));
  BigtableStagedOptions zero;
  zero.marker_family = "m";
  zero.max_entries_per_interval = 0;
  EXPECT_THAT(message(Builder(table, zero)), HasSubstr("max_entries_per_interval"));
  EXPECT_THAT(message(BigtableStagedSink<std::int64_t>::builder()), HasSubstr("table(...)"));
}

runtime::JobResult RunCounters(std::shared_ptr<BigtableStagedSink<std::int64_t>> sink, int n,
                               std::function<void(std::int64_t)> in_map = nullptr,
                               int restarts = 0) {
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  env.enable_checkpointing(10ms);
  if (restarts > 0) {
    env.config().restart_strategy.kind = runtime::RestartStrategyKind::kFixedDelay;
    env.config().restart_strategy.max_attempts = restarts;
    env.config().restart_strategy.delay = 1ms;
  }
  env.from_source(std::make_shared<NumberSequenceSource>(0, n - 1, 4),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .map(
          [in_map](const std::int64_t& v) {
            std::this_thread::sleep_for(20us);
            if (in_map) in_map(v);
            return v;
          },
          "slow")
      .sink_to(sink, "staged");
  return env.execute("staged");
}

TEST(BigtableStagedSinkTest, EveryEntryIsAppliedOnceAfterItsCheckpointCompletes) {
  auto table = std::make_shared<MarkerTable>();
  auto sink = Builder(table).build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  auto result = RunCounters(*sink, 2000);
  ASSERT_TRUE(result.status.ok()) << result.status;
  for (int k = 0; k < 10; ++k) {
    EXPECT_EQ(table->sum("counter#" + std::to_string(k)), Expected(k, 2000)) << k;
  }
  EXPECT_EQ(table->markers(), 1980u) << "one marker per applied envelope";
  EXPECT_EQ(result.metric("staged", "requestsCompleted"), 1980);
  EXPECT_EQ(result.metric("staged", "requestsDeduplicated"), 0);
  EXPECT_EQ(result.metric("staged", "recordsSkipped"), 20);
}

TEST(BigtableStagedSinkTest, FailuresAfterTheRowWasAppliedAndRestartsNeverCountTwice) {
  auto table = std::make_shared<MarkerTable>();
  // Call 300 is applied but answered UNAVAILABLE (sent again within the commit); call 900 fails
  // before applying with a deadline (likewise); call 1500 is applied and answered INTERNAL, which
  // fails the commit: the restore sends its checkpoint's envelopes again.
  table->fail_call(300, {absl::UnavailableError("connection reset"), /*after_apply=*/true});
  table->fail_call(900, {absl::DeadlineExceededError("deadline"), /*after_apply=*/false});
  table->fail_call(1500, {absl::InternalError("stream reset"), /*after_apply=*/true});
  auto sink = Builder(table).build();
  ASSERT_TRUE(sink.ok());
  auto failed_once = std::make_shared<std::atomic<bool>>(false);
  auto result = RunCounters(
      *sink, 3000,
      [failed_once](std::int64_t v) {
        if (v == 2500 && !failed_once->exchange(true)) throw std::runtime_error("injected");
      },
      /*restarts=*/5);
  ASSERT_TRUE(result.status.ok()) << result.status;
  // One commit failure and one operator failure; both can land in the same attempt (the sink's
  // commit fails while the job is already failing).
  EXPECT_GE(result.restarts, 1);
  for (int k = 0; k < 10; ++k) {
    EXPECT_EQ(table->sum("counter#" + std::to_string(k)), Expected(k, 3000))
        << "counter#" << k << " must equal its sum exactly";
  }
  EXPECT_EQ(table->markers(), 2970u);
  EXPECT_GE(result.metric("staged", "requestsDeduplicated"), 1)
      << "the envelope applied before its answer was lost is found by its marker";
}

TEST(BigtableStagedSinkTest, TransientAnswersAreSentAgainWithinTheCommitNotFailingIt) {
  auto table = std::make_shared<MarkerTable>();
  table->fail_call(40, {absl::UnavailableError("reset"), /*after_apply=*/true});
  table->fail_call(41, {absl::AbortedError("aborted"), /*after_apply=*/false});
  auto sink = Builder(table).build();
  ASSERT_TRUE(sink.ok());
  auto result = RunCounters(*sink, 500);  // no restart strategy: a failed commit fails the job
  ASSERT_TRUE(result.status.ok()) << result.status;
  for (int k = 0; k < 10; ++k) {
    EXPECT_EQ(table->sum("counter#" + std::to_string(k)), Expected(k, 500)) << k;
  }
  EXPECT_EQ(result.metric("staged", "requestsDeduplicated"), 1)
      << "the applied call answered UNAVAILABLE found its marker when sent again";
  // Applied by an answer of this commit: the call whose answer was lost was applied, but its
  // resend is the one answered, as a duplicate.
  EXPECT_EQ(result.metric("staged", "numRecordsSend"), 494);
}

TEST(BigtableStagedSinkTest, AnIntervalOverItsCapFailsAtOnce) {
  auto table = std::make_shared<MarkerTable>();
  BigtableStagedOptions small;
  small.marker_family = "m";
  small.max_entries_per_interval = 5;
  auto sink = Builder(table, small).build();
  ASSERT_TRUE(sink.ok());
  StreamExecutionEnvironment env;
  env.set_parallelism(1);  // no checkpointing: every entry stays in one interval
  env.from_source(std::make_shared<NumberSequenceSource>(0, 99, 1),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .sink_to(*sink, "staged");
  auto result = env.execute("capped");
  ASSERT_FALSE(result.status.ok());
  EXPECT_EQ(result.status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(result.status.message(), HasSubstr("max_entries_per_interval (5)"));
  EXPECT_EQ(table->calls(), 0);
}

TEST(BigtableStagedSinkTest, ATargetThatFailsValidationIsNeverWritten) {
  auto table = std::make_shared<MarkerTable>();
  auto sink =
      Builder(table)
          .target_validator([](const std::string& t, const std::string&) {
            return absl::FailedPreconditionError(t + " has no column family 'flink_commit'");
          })
          .build();
  ASSERT_TRUE(sink.ok());
  auto result = RunCounters(*sink, 100);
  ASSERT_FALSE(result.status.ok());
  EXPECT_EQ(result.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status.message(), HasSubstr("no column family"));
  EXPECT_EQ(table->calls(), 0);
}

}  // namespace
}  // namespace gcpstream::bigtable
