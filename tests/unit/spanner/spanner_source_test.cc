// The Spanner snapshot source against a scripted SpannerStub: the builder's checks, the
// checkpoint state's encoding, the plan (one batch read-only transaction, partitions as splits,
// the hints), the partition reader's fetch hand-off bounds, empty partitions, failures, the
// restore checks (retention, lost session), and whole jobs reading every partition once.
#include "gcpstream/spanner/source/spanner_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "tests/support/fake_spanner.h"

namespace gcpstream::spanner {
namespace {

namespace sp = google::spanner::v1;
using testing::FakeSpannerStub;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// One message with the metadata (Id STRING, N INT64) and `rows` rows "<prefix><i>", i.
sp::PartialResultSet Rows(const std::string& prefix, int rows, std::size_t pad = 0) {
  sp::PartialResultSet part;
  auto* id = part.mutable_metadata()->mutable_row_type()->add_fields();
  id->set_name("Id");
  id->mutable_type()->set_code(sp::STRING);
  auto* n = part.mutable_metadata()->mutable_row_type()->add_fields();
  n->set_name("N");
  n->mutable_type()->set_code(sp::INT64);
  for (int i = 0; i < rows; ++i) {
    part.add_values()->set_string_value(prefix + std::to_string(i) + std::string(pad, '.'));
    part.add_values()->set_string_value(std::to_string(i));
  }
  part.set_resume_token("t");
  return part;
}

// What the database_options query answers for version_retention_period (no row when empty).
FakeSpannerStub::StreamScript Retention(const std::string& retention) {
  sp::PartialResultSet part;
  auto* f = part.mutable_metadata()->mutable_row_type()->add_fields();
  f->set_name("OPTION_VALUE");
  f->mutable_type()->set_code(sp::STRING);
  if (!retention.empty()) part.add_values()->set_string_value(retention);
  return FakeSpannerStub::StreamScript{{part}, absl::OkStatus()};
}
bool IsRetentionQuery(const FakeSpannerStub::StreamCall& call) {
  return call.sql.find("version_retention_period") != std::string::npos;
}

// The retention query answers `retention` (none when empty); the probe answers `probe`.
void ScriptRestoreChecks(FakeSpannerStub& stub, std::string retention, absl::Status probe) {
  stub.on_call = [retention, probe](std::size_t, const FakeSpannerStub::StreamCall& call) {
    if (IsRetentionQuery(call)) return Retention(retention);
    return FakeSpannerStub::StreamScript{{}, probe};
  };
}

SpannerReadOperation Query() { return SpannerReadOperation::query("SELECT Id, N FROM T"); }

SpannerRowDeserializer<std::string> IdOnly() {
  return [](const Row& row, Collector<std::string>& out) -> absl::Status {
    GCP_ASSIGN_OR_RETURN(Value id, row.get("Id"));
    GCP_ASSIGN_OR_RETURN(std::string s, id.as_string());
    out.collect(std::move(s));
    return absl::OkStatus();
  };
}

SpannerSource<std::string>::Builder Builder(std::shared_ptr<FakeSpannerStub> stub) {
  auto b = SpannerSource<std::string>::builder();
  b.database(connector::DatabaseDestination::of("p", "i", "d"))
      .read_operation(Query())
      .deserializer(IdOnly())
      .stub(std::move(stub));
  return b;
}

TEST(SpannerSourceBuilderTest, RefusesSingleUseOnlyTimestampBoundsNamingTheAllowedOnes) {
  auto stub = std::make_shared<FakeSpannerStub>();
  for (const TimestampBound& bound :
       {TimestampBound::max_staleness(10s), TimestampBound::min_read_timestamp(absl::Now())}) {
    auto built = Builder(stub).timestamp_bound(bound).build();
    ASSERT_FALSE(built.ok());
    EXPECT_EQ(built.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(built.status().message(), HasSubstr("single-use"));
    EXPECT_THAT(built.status().message(), HasSubstr("exact_staleness"));
  }
  EXPECT_TRUE(Builder(stub).timestamp_bound(TimestampBound::exact_staleness(15s)).build().ok());
  EXPECT_TRUE(Builder(stub)
                  .timestamp_bound(TimestampBound::read_timestamp(absl::FromUnixSeconds(1)))
                  .build()
                  .ok());
  auto future = Builder(stub)
                    .timestamp_bound(TimestampBound::read_timestamp(absl::Now() + absl::Hours(2)))
                    .build();
  EXPECT_THAT(future.status().message(), HasSubstr("in the future"));
  auto negative = Builder(stub).timestamp_bound(TimestampBound::exact_staleness(-1s)).build();
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SpannerSourceBuilderTest, NamesWhatIsMissingOrOutOfRange) {
  auto stub = std::make_shared<FakeSpannerStub>();
  auto no_db =
      SpannerSource<std::string>::builder().read_operation(Query()).deserializer(IdOnly()).build();
  EXPECT_THAT(no_db.status().message(), HasSubstr("database"));
  auto no_op = SpannerSource<std::string>::builder()
                   .database(connector::DatabaseDestination::of("p", "i", "d"))
                   .deserializer(IdOnly())
                   .build();
  EXPECT_THAT(no_op.status().message(), HasSubstr("read_operation"));
  auto empty_sql = Builder(stub).read_operation(SpannerReadOperation::query("  ")).build();
  EXPECT_THAT(empty_sql.status().message(), HasSubstr("empty"));
  auto no_columns = Builder(stub).read_operation(SpannerReadOperation::read("T", {})).build();
  EXPECT_THAT(no_columns.status().message(), HasSubstr("column"));
  SpannerSourceOptions options;
  options.max_partitions = 0;
  EXPECT_THAT(Builder(stub).options(options).build().status().message(),
              HasSubstr("maxPartitions"));
  options = {};
  options.max_rows_per_fetch = 0;
  EXPECT_THAT(Builder(stub).options(options).build().status().message(),
              HasSubstr("maxRowsPerFetch"));
}

TEST(SpannerSourceStateTest, SplitsAndEnumeratorStateRoundTripAndCorruptionIsDataLoss) {
  SpannerPartitionSplit split;
  split.index = 7;
  split.partition_token = std::string("\0\xff token", 8);
  split.transaction = {"sessions/s1", std::string("\x01tx", 3), "2026-12-02T03:00:00.5Z"};
  split.started = true;
  SpannerPartitionSplitSerializer splits;
  auto bytes = splits.serialize(split);
  ASSERT_TRUE(bytes.ok());
  auto back = splits.deserialize(1, *bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, split);
  EXPECT_EQ(splits.deserialize(2, *bytes).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(splits.deserialize(1, "{\"index\":1}").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(splits.deserialize(1, "not json").status().code(), absl::StatusCode::kDataLoss);

  SpannerSourceEnumState state;
  state.planned = true;
  state.transaction = split.transaction;
  state.partition_count = 9;
  state.unassigned = {split, split};
  state.unassigned[1].index = 8;
  SpannerSourceEnumStateSerializer states;
  auto encoded = states.serialize(state);
  ASSERT_TRUE(encoded.ok());
  auto decoded = states.deserialize(1, *encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(decoded->planned);
  EXPECT_EQ(decoded->transaction, state.transaction);
  EXPECT_EQ(decoded->partition_count, 9);
  EXPECT_EQ(decoded->unassigned, state.unassigned);
  std::string broken = *encoded;
  broken.replace(broken.find("\"partition_count\":9"), 19, "\"partition_count\":-9");
  EXPECT_EQ(states.deserialize(1, broken).status().code(), absl::StatusCode::kDataLoss);
}

TEST(SpannerSourcePlanTest, OneReadOnlyTransactionPartitionedWithTheHints) {
  auto stub = std::make_shared<FakeSpannerStub>();
  stub->partitions = 3;
  SpannerReadClient client("projects/p/instances/i/databases/d", stub);
  SpannerSourceOptions options;
  options.timestamp_bound = TimestampBound::exact_staleness(10s);
  options.max_partitions = 5;
  options.partition_size_bytes = 1 << 20;
  auto planned = PlanBatchRead(client.data(), Query(), options);
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_EQ(stub->begin_requests().size(), 1u);
  const auto begins = stub->begin_requests();
  const auto& ro = begins[0].options().read_only();
  EXPECT_TRUE(ro.return_read_timestamp());
  EXPECT_EQ(ro.exact_staleness().seconds(), 10);
  ASSERT_EQ(stub->partition_queries().size(), 1u);
  const auto queries = stub->partition_queries();
  const auto& request = queries[0];
  EXPECT_EQ(request.sql(), "SELECT Id, N FROM T");
  EXPECT_EQ(request.transaction().id(), "tx0");
  EXPECT_EQ(request.partition_options().max_partitions(), 5);
  EXPECT_EQ(request.partition_options().partition_size_bytes(), 1 << 20);
  EXPECT_EQ(planned->partition_count, 3);
  EXPECT_EQ(planned->transaction.read_timestamp, "2023-11-14T22:13:20Z");
  ASSERT_EQ(planned->unassigned.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(planned->unassigned[i].index, i);
    EXPECT_EQ(planned->unassigned[i].partition_token, "p" + std::to_string(i));
    EXPECT_EQ(planned->unassigned[i].transaction.session, request.session());
  }
}

TEST(SpannerSourcePlanTest, ATableReadThroughAnIndexIsPartitionedAsARead) {
  auto stub = std::make_shared<FakeSpannerStub>();
  SpannerReadClient client("projects/p/instances/i/databases/d", stub);
  auto planned = PlanBatchRead(
      client.data(), SpannerReadOperation::read_using_index("T", "TByN", {"Id", "N"}), {});
  ASSERT_TRUE(planned.ok()) << planned.status();
  const auto reads = stub->partition_reads();
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(reads[0].table(), "T");
  EXPECT_EQ(reads[0].index(), "TByN");
  EXPECT_TRUE(reads[0].key_set().all());
  EXPECT_TRUE(stub->begin_requests().at(0).options().read_only().strong());
}

TEST(SpannerSourcePlanTest, TheServicesRefusalToPartitionKeepsItsCodeAndText) {
  auto stub = std::make_shared<FakeSpannerStub>();
  stub->on_partition = [](std::size_t) {
    return absl::InvalidArgumentError("Query is not root partitionable since it has ORDER BY");
  };
  SpannerReadClient client("projects/p/instances/i/databases/d", stub);
  auto planned = PlanBatchRead(client.data(), Query(), {});
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(planned.status().message(),
              HasSubstr("not root partitionable since it has ORDER BY"));
}

class PartitionReaderTest : public ::testing::Test {
 protected:
  std::unique_ptr<SpannerPartitionReader> Reader(SpannerSourceOptions options = {}) {
    return std::make_unique<SpannerPartitionReader>(
        std::make_shared<SpannerReadClient>("projects/p/instances/i/databases/d", stub_), Query(),
        options);
  }
  static SpannerPartitionSplit Split(int index) {
    SpannerPartitionSplit s;
    s.index = index;
    s.partition_token = "p" + std::to_string(index);
    s.transaction = {"sessions/batch", "tx9", "2026-12-02T03:00:00Z"};
    return s;
  }
  // Fetches until the split finished or `max` fetches; the batch sizes in order.
  static std::vector<std::size_t> Drain(SpannerPartitionReader& reader, absl::Status* failure,
                                        std::vector<std::string>* ids = nullptr, int max = 100) {
    std::vector<std::size_t> sizes;
    for (int i = 0; i < max; ++i) {
      auto batch = reader.fetch();
      if (!batch.ok()) {
        *failure = batch.status();
        return sizes;
      }
      if (batch->element_count() > 0) sizes.push_back(batch->element_count());
      if (ids) {
        for (auto& group : batch->splits) {
          for (auto& row : group.elements) ids->push_back(*row.get("Id")->as_string());
        }
      }
      if (!batch->finished_splits.empty()) return sizes;
    }
    ADD_FAILURE() << "the split did not finish in " << max << " fetches";
    return sizes;
  }
  std::shared_ptr<FakeSpannerStub> stub_ = std::make_shared<FakeSpannerStub>();
};

TEST_F(PartitionReaderTest, RejoinsTheTransactionWithTheOptionsAndBoundsEachFetchByRows) {
  stub_->on_call = [](std::size_t, const FakeSpannerStub::StreamCall&) {
    return FakeSpannerStub::StreamScript{{Rows("r", 5)}, absl::OkStatus()};
  };
  SpannerSourceOptions options;
  options.max_rows_per_fetch = 2;
  options.data_boost_enabled = true;
  options.rpc_priority = sp::RequestOptions::PRIORITY_LOW;
  auto reader = Reader(options);
  ASSERT_TRUE(reader->handle_splits_addition({{Split(3)}}).ok());
  absl::Status failure;
  std::vector<std::string> ids;
  auto sizes = Drain(*reader, &failure, &ids);
  ASSERT_TRUE(failure.ok()) << failure;
  for (std::size_t s : sizes) EXPECT_LE(s, 2u);
  EXPECT_THAT(ids, ::testing::ElementsAre("r0", "r1", "r2", "r3", "r4"));
  ASSERT_EQ(stub_->streams().size(), 1u);
  const auto call = stub_->streams()[0];
  EXPECT_EQ(call.session, "sessions/batch");
  EXPECT_EQ(call.transaction_id, "tx9");
  EXPECT_EQ(call.partition_token, "p3");
  EXPECT_TRUE(call.data_boost);
  EXPECT_EQ(call.priority, sp::RequestOptions::PRIORITY_LOW);
  EXPECT_EQ(call.sql, "SELECT Id, N FROM T");
  EXPECT_TRUE(reader->close().ok());
}

TEST_F(PartitionReaderTest, BoundsEachFetchByBytesAndHandsALargerRowOverAlone) {
  stub_->on_call = [](std::size_t, const FakeSpannerStub::StreamCall&) {
    auto part = Rows("r", 6, 100);  // ~ 100 bytes of Id + 8 of N per row
    auto big = Rows("big", 1, 5000);
    big.clear_metadata();
    return FakeSpannerStub::StreamScript{{part, big}, absl::OkStatus()};
  };
  SpannerSourceOptions options;
  options.max_bytes_per_fetch = 250;
  auto reader = Reader(options);
  ASSERT_TRUE(reader->handle_splits_addition({{Split(0)}}).ok());
  absl::Status failure;
  std::vector<std::string> ids;
  auto sizes = Drain(*reader, &failure, &ids);
  ASSERT_TRUE(failure.ok()) << failure;
  ASSERT_EQ(ids.size(), 7u);
  for (std::size_t s : sizes) EXPECT_LE(s, 2u) << "two ~110-byte rows fit under 250 bytes";
  EXPECT_EQ(sizes.back(), 1u) << "the 5 kB row goes alone";
}

TEST_F(PartitionReaderTest, APartitionWithNoRowIsAnOrdinaryFinishedPartition) {
  auto reader = Reader();
  ASSERT_TRUE(reader->handle_splits_addition({{Split(0), Split(1)}}).ok());
  stub_->on_call = [](std::size_t, const FakeSpannerStub::StreamCall& call) {
    if (call.partition_token == "p0") {
      auto empty = Rows("", 0);
      return FakeSpannerStub::StreamScript{{empty}, absl::OkStatus()};
    }
    return FakeSpannerStub::StreamScript{{Rows("x", 2)}, absl::OkStatus()};
  };
  absl::Status failure;
  std::vector<std::string> ids;
  auto batch = reader->fetch();
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->element_count(), 0u);
  EXPECT_THAT(batch->finished_splits, ::testing::ElementsAre("partition-0"));
  Drain(*reader, &failure, &ids);
  ASSERT_TRUE(failure.ok()) << failure;
  EXPECT_THAT(ids, ::testing::ElementsAre("x0", "x1")) << "the next partition is still read";
}

TEST_F(PartitionReaderTest, AFailedReadFailsTheReaderWithItsCodeAndALostSessionSaysWhatToDo) {
  stub_->on_call = [](std::size_t, const FakeSpannerStub::StreamCall&) {
    return FakeSpannerStub::StreamScript{{}, absl::PermissionDeniedError("no useDataBoost")};
  };
  auto reader = Reader();
  ASSERT_TRUE(reader->handle_splits_addition({{Split(2)}}).ok());
  absl::Status failure;
  Drain(*reader, &failure);
  EXPECT_EQ(failure.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(failure.message(), HasSubstr("partition-2"));

  stub_->on_call = [](std::size_t, const FakeSpannerStub::StreamCall&) {
    return FakeSpannerStub::StreamScript{{}, FakeSpannerStub::SessionNotFound()};
  };
  auto second = Reader();
  ASSERT_TRUE(second->handle_splits_addition({{Split(0)}}).ok());
  failure = absl::OkStatus();
  Drain(*second, &failure);
  EXPECT_EQ(failure.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(failure.message(), HasSubstr("2026-12-02T03:00:00Z"));
  EXPECT_THAT(failure.message(), HasSubstr("sessions/batch"));
}

TEST_F(PartitionReaderTest, CloseStopsAStreamThatIsBlockedOnAFullBuffer) {
  stub_->on_call = [](std::size_t, const FakeSpannerStub::StreamCall&) {
    return FakeSpannerStub::StreamScript{{Rows("r", 50)}, absl::OkStatus(), /*hang=*/true};
  };
  SpannerSourceOptions options;
  options.max_rows_per_fetch = 1;
  auto reader = Reader(options);
  ASSERT_TRUE(reader->handle_splits_addition({{Split(0)}}).ok());
  auto batch = reader->fetch();
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->element_count(), 1u);
  EXPECT_TRUE(reader->close().ok());  // returns: the test would hang otherwise
}

TEST(SpannerSourceRestoreTest, ParsesRetentionPeriodsAsSpannerReportsThem) {
  EXPECT_EQ(*ParseRetentionPeriod("1h"), absl::Hours(1));
  EXPECT_EQ(*ParseRetentionPeriod("7d"), absl::Hours(168));
  EXPECT_EQ(*ParseRetentionPeriod("90m"), absl::Minutes(90));
  EXPECT_EQ(*ParseRetentionPeriod("3600s"), absl::Seconds(3600));
  for (const char* bad : {"", "h", "1x", "-1h", "1.5h"}) {
    EXPECT_FALSE(ParseRetentionPeriod(bad).ok()) << bad;
  }
}

TEST(SpannerSourceRestoreTest, ASnapshotOlderThanTheRetentionIsRefusedNamingBoth) {
  auto stub = std::make_shared<FakeSpannerStub>();
  SpannerReadClient client("projects/p/instances/i/databases/d", stub);
  const BatchTransactionRef tx{"sessions/batch", "tx", "2026-12-02T01:00:00Z"};
  const absl::Time now = *ParseTimestamp("2026-12-02T03:30:00Z");
  ScriptRestoreChecks(*stub, "2h", absl::OkStatus());
  absl::Status s = CheckBatchReadRestorable(client.data(), tx, now);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("2026-12-02T01:00:00Z"));
  EXPECT_THAT(s.message(), HasSubstr("2h"));
  // No retention row: Spanner's default of one hour applies.
  ScriptRestoreChecks(*stub, "", absl::OkStatus());
  s = CheckBatchReadRestorable(client.data(), tx, now);
  EXPECT_THAT(s.message(), HasSubstr("1h (the default)"));
  // Inside a week's retention, and the session answers: the read goes on.
  ScriptRestoreChecks(*stub, "7d", absl::OkStatus());
  EXPECT_TRUE(CheckBatchReadRestorable(client.data(), tx, now).ok());
  const auto probe = stub->streams().back();
  EXPECT_EQ(probe.session, "sessions/batch");
  EXPECT_EQ(probe.transaction_id, "tx");
}

TEST(SpannerSourceRestoreTest, AGoneSessionIsRefusedAsALostTransaction) {
  auto stub = std::make_shared<FakeSpannerStub>();
  SpannerReadClient client("projects/p/instances/i/databases/d", stub);
  ScriptRestoreChecks(*stub, "7d", FakeSpannerStub::SessionNotFound());
  const BatchTransactionRef tx{"sessions/batch", "tx", "2026-12-02T01:00:00Z"};
  absl::Status s =
      CheckBatchReadRestorable(client.data(), tx, *ParseTimestamp("2026-12-02T02:00:00Z"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("sessions/batch"));
  EXPECT_THAT(s.message(), HasSubstr("without restoring"));
}

// A whole job: `partitions` partitions of which the odd ones are empty, read by `parallelism`
// subtasks; every row of every partition arrives once.
TEST(SpannerSourceJobTest, EveryPartitionIsReadOnceIncludingEmptyOnesAtAnyParallelism) {
  for (int parallelism : {1, 3}) {
    auto stub = std::make_shared<FakeSpannerStub>();
    stub->partitions = 7;
    stub->on_call = [](std::size_t, const FakeSpannerStub::StreamCall& call) {
      const int p = std::stoi(call.partition_token.substr(1));
      return FakeSpannerStub::StreamScript{{Rows("p" + std::to_string(p) + "-", p % 2 ? 0 : 40)},
                                           absl::OkStatus()};
    };
    auto source = Builder(stub).build();
    ASSERT_TRUE(source.ok()) << source.status();
    auto seen = std::make_shared<std::multiset<std::string>>();
    auto mu = std::make_shared<std::mutex>();
    StreamExecutionEnvironment env;
    env.set_parallelism(parallelism);
    env.from_source(*source, WatermarkStrategy<std::string>::no_watermarks(), "spanner")
        .sink_to(std::make_shared<ForEachSink<std::string>>([seen, mu](const std::string& v) {
                   std::lock_guard lock(*mu);
                   seen->insert(v);
                 }),
                 "seen");
    auto result = env.execute("spanner-source");
    ASSERT_TRUE(result.status.ok()) << result.status;
    EXPECT_EQ(seen->size(), 160u) << "4 non-empty partitions of 40 rows";
    for (int p : {0, 2, 4, 6}) {
      for (int i = 0; i < 40; ++i) {
        EXPECT_EQ(seen->count(fmt::format("p{}-{}", p, i)), 1u) << p << "/" << i;
      }
    }
    EXPECT_EQ(result.metric("spanner", "rowsRead"), 160);
    EXPECT_EQ(result.metric("spanner", "partitionsFinished"), 7);
    EXPECT_EQ(stub->begins(), 1) << "one batch transaction";
    EXPECT_EQ(stub->partition_calls(), 1);
  }
}

TEST(SpannerSourceJobTest, ADeserializerThatEmitsNothingSkipsAndOneThatFailsFailsTheJob) {
  auto stub = std::make_shared<FakeSpannerStub>();
  stub->partitions = 1;
  stub->on_call = [](std::size_t, const FakeSpannerStub::StreamCall&) {
    return FakeSpannerStub::StreamScript{{Rows("r", 10)}, absl::OkStatus()};
  };
  auto evens = Builder(stub)
                   .deserializer([](const Row& row, Collector<std::string>& out) -> absl::Status {
                     GCP_ASSIGN_OR_RETURN(Value n, row.get("N"));
                     GCP_ASSIGN_OR_RETURN(std::int64_t v, n.as_int64());
                     if (v % 2 == 0) out.collect(std::to_string(v));
                     return absl::OkStatus();
                   })
                   .build();
  ASSERT_TRUE(evens.ok());
  StreamExecutionEnvironment env;
  env.from_source(*evens, WatermarkStrategy<std::string>::no_watermarks(), "spanner")
      .sink_to(std::make_shared<ForEachSink<std::string>>([](const std::string&) {}), "none");
  auto result = env.execute("skip");
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(result.metric("spanner", "recordsSkipped"), 5);
  EXPECT_EQ(result.metric("spanner", "rowsRead"), 10);

  auto failing = Builder(stub)
                     .deserializer([](const Row& row, Collector<std::string>&) -> absl::Status {
                       return row.get("Missing").status();
                     })
                     .build();
  ASSERT_TRUE(failing.ok());
  StreamExecutionEnvironment env2;
  env2.from_source(*failing, WatermarkStrategy<std::string>::no_watermarks(), "spanner")
      .sink_to(std::make_shared<ForEachSink<std::string>>([](const std::string&) {}), "none");
  auto failed = env2.execute("fail");
  EXPECT_EQ(failed.status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(failed.status.message(), HasSubstr("Missing"));
  EXPECT_THAT(failed.status.message(), HasSubstr("Id, N"));
}

TEST(SpannerSourceJobTest, ARestartReadsOnlyThePartitionInFlightAgainInTheSameTransaction) {
  auto stub = std::make_shared<FakeSpannerStub>();
  stub->partitions = 4;
  stub->read_timestamp_seconds = absl::ToUnixSeconds(absl::Now());
  stub->on_call = [](std::size_t, const FakeSpannerStub::StreamCall& call) {
    if (IsRetentionQuery(call)) return Retention("1h");
    return FakeSpannerStub::StreamScript{{Rows(call.partition_token + "-", 100)}, absl::OkStatus()};
  };
  auto source = Builder(stub).build();
  ASSERT_TRUE(source.ok());
  auto seen = std::make_shared<std::map<std::string, int>>();
  auto mu = std::make_shared<std::mutex>();
  auto failed = std::make_shared<std::atomic<bool>>(false);
  StreamExecutionEnvironment env;
  env.set_parallelism(1);
  env.enable_checkpointing(5ms);
  env.config().restart_strategy.kind = runtime::RestartStrategyKind::kFixedDelay;
  env.config().restart_strategy.max_attempts = 1;
  env.config().restart_strategy.delay = 1ms;
  env.from_source(*source, WatermarkStrategy<std::string>::no_watermarks(), "spanner")
      .map(
          [failed](const std::string& v) {
            std::this_thread::sleep_for(500us);  // 50 ms a partition: checkpoints between them
            if (v == "p2-50" && !failed->exchange(true)) throw std::runtime_error("injected");
            return v;
          },
          "slow")
      .sink_to(std::make_shared<ForEachSink<std::string>>([seen, mu](const std::string& v) {
                 std::lock_guard lock(*mu);
                 ++(*seen)[v];
               }),
               "seen");
  auto result = env.execute("restart");
  ASSERT_TRUE(result.status.ok()) << result.status;
  ASSERT_EQ(result.restarts, 1);
  EXPECT_EQ(seen->size(), 400u);
  std::map<std::string, int> opened;
  std::set<std::string> transactions;
  for (const auto& call : stub->streams()) {
    if (call.partition_token.empty()) continue;  // the restore's checks
    ++opened[call.partition_token];
    transactions.insert(call.transaction_id);
  }
  EXPECT_EQ(opened["p0"], 1) << "a finished partition was read again";
  EXPECT_EQ(opened["p1"], 1) << "a finished partition was read again";
  EXPECT_EQ(opened["p2"], 2) << "the partition in flight is read again from its start";
  EXPECT_EQ(opened["p3"], 1);
  EXPECT_EQ(transactions.size(), 1u) << "the restart must rejoin the same transaction";
  EXPECT_EQ(stub->begins(), 1);
  EXPECT_EQ((*seen)["p2-0"], 2);
  EXPECT_EQ((*seen)["p1-0"], 1);
  EXPECT_THAT(result.status.message(), ::testing::Not(HasSubstr("deserializer")));
}

TEST(SpannerSourceJobTest, LineageNamesTheTableOfATableReadAndTheDatabaseOfAQuery) {
  auto stub = std::make_shared<FakeSpannerStub>();
  auto table = Builder(stub).read_operation(SpannerReadOperation::read("Flights", {"Id"})).build();
  ASSERT_TRUE(table.ok());
  auto v = (*table)->lineage_vertex();
  EXPECT_TRUE(v.bounded);
  ASSERT_EQ(v.datasets.size(), 1u);
  EXPECT_EQ(v.datasets[0].name_space, "spanner://p:i");
  EXPECT_EQ(v.datasets[0].name, "d.Flights");
  auto query = Builder(stub).build();
  EXPECT_EQ((*query)->lineage_vertex().datasets.at(0).name_space, "spanner://p:i");
}

}  // namespace
}  // namespace gcpstream::spanner
