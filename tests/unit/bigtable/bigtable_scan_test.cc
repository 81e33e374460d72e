// The Bigtable scan source: range arithmetic and split planning (pure functions fed sampled keys
// directly, because the emulator samples no tablets worth planning against), chunked-row
// reassembly, state serialization, the split reader against a scripted ReadRows server, and
// whole jobs that restart and resume past the rows already handed over.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "gcpstream/bigtable/source/bigtable_source.h"
#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/metric_registry.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "tests/support/scripted_bigtable_reads.h"

namespace gcpstream::bigtable {
namespace {

namespace v2 = google::bigtable::v2;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ScriptedBigtableReads;
using namespace std::chrono_literals;

RowKeyRange R(std::string start, std::string end) { return RowKeyRange{start, end}; }
constexpr char kTableName[] = "projects/p/instances/i/tables/t";

TEST(RowKeyRangeTest, APrefixRunsToItsSuccessorAndAnAllFfPrefixToTheEnd) {
  EXPECT_EQ(PrefixRange("ab"), R("ab", "ac"));
  EXPECT_EQ(PrefixRange(std::string("a\xff\xff", 3)), R(std::string("a\xff\xff", 3), "b"));
  EXPECT_EQ(PrefixRange(std::string("\xff\xff", 2)), R(std::string("\xff\xff", 2), ""));
  EXPECT_EQ(PrefixRange(""), R("", "")) << "no prefix: the whole table";
  EXPECT_EQ(SingleKeyRange("k"), R("k", std::string("k\0", 2)));
}

TEST(RowKeyRangeTest, NestedOverlappingAndTouchingRangesMergeAndEmptyOnesDrop) {
  // Two nested prefixes would otherwise put the rows they share in two splits.
  EXPECT_THAT(NormalizeRanges({PrefixRange("user#1"), PrefixRange("user#")}),
              ElementsAre(R("user#", "user$")));
  EXPECT_THAT(NormalizeRanges({R("c", "d"), R("a", "b"), R("b", "c")}), ElementsAre(R("a", "d")));
  EXPECT_THAT(NormalizeRanges({R("a", "b"), R("x", ""), R("y", "z"), R("m", "m")}),
              ElementsAre(R("a", "b"), R("x", "")));
  EXPECT_THAT(NormalizeRanges({R("", "c"), R("b", "")}), ElementsAre(R("", "")));
  EXPECT_TRUE(IsEmptyRange(R("b", "a")));
  EXPECT_TRUE(IsEmptyRange(R("a", "a")));
  EXPECT_FALSE(IsEmptyRange(R("a", "")));
}

TEST(RowKeyRangeTest, RenderingEscapesTheNotationsOwnCharactersAndUnprintableBytes) {
  EXPECT_EQ(FormatRowRange(R("", "")), "(*, *)");
  EXPECT_EQ(FormatRowRange(R("", "row-9")), "(*, row-9)");
  EXPECT_EQ(FormatRowRange(R("a, b", "c")), "[a\\x2c b, c)");
  EXPECT_EQ(FormatRowRange(R(std::string("k\0", 2), "*\\")), "[k\\x00, \\x2a\\x5c)");
}

TEST(RowKeyRangeTest, WhatIsLeftAfterARowStartsJustPastIt) {
  EXPECT_EQ(RangeAfter(R("a", "z"), "m"), R(std::string("m\0", 2), "z"));
  EXPECT_TRUE(IsEmptyRange(RangeAfter(SingleKeyRange("k"), "k")))
      << "the one row of a single-key range was consumed";
  EXPECT_EQ(RangeAfter(R("m", ""), "a"), R("m", "")) << "never moves back";
}

// Every piece planned lies inside a configured range, the pieces touch, and together they
// rebuild exactly the configured ranges: a planner that loses a tail reads less and succeeds.
void ExpectTiles(const std::vector<BigtableScanSplit>& splits,
                 const std::vector<RowKeyRange>& ranges) {
  std::vector<RowKeyRange> pieces;
  for (const auto& s : splits) pieces.push_back(s.range);
  for (std::size_t i = 0; i + 1 < pieces.size(); ++i) {
    EXPECT_FALSE(IsEmptyRange(pieces[i])) << FormatRowRange(pieces[i]);
  }
  EXPECT_EQ(NormalizeRanges(pieces), ranges);
}

TEST(BigtableScanPlanTest, EachRangeIsCutAtEverySampledKeyStrictlyInsideIt) {
  const std::vector<RowKeyRange> ranges = {R("b", "f"), R("m", "")};
  auto splits = PlanScanSplits(ranges, {"a", "b", "c", "e", "f", "g", "n", "x", ""});
  std::vector<RowKeyRange> pieces;
  for (const auto& s : splits) pieces.push_back(s.range);
  EXPECT_THAT(pieces, ElementsAre(R("b", "c"), R("c", "e"), R("e", "f"), R("m", "n"), R("n", "x"),
                                  R("x", "")));
  EXPECT_EQ(splits.front().id, "range-0");
  EXPECT_EQ(splits.back().id, "range-5");
  ExpectTiles(splits, ranges);
}

TEST(BigtableScanPlanTest, NoSamplesOrOnlyTheEndMarkerLeaveOneSplitPerRange) {
  EXPECT_EQ(PlanScanSplits({R("", "")}, {}).size(), 1u);
  EXPECT_EQ(PlanScanSplits({R("", "")}, {""}).size(), 1u);
  auto many = PlanScanSplits({R("", "")}, {"k3", "k1", "k2", "k2"});
  EXPECT_EQ(many.size(), 4u) << "unsorted and repeated samples are sorted and deduplicated";
  ExpectTiles(many, {R("", "")});
}

TEST(BigtableScanStateTest, SplitsAndEnumeratorStateRoundTripAndCorruptionIsDataLoss) {
  BigtableScanSplitSerializer splits;
  BigtableScanSplit split{"range-3", R(std::string("a\0b", 3), "")};
  auto bytes = splits.serialize(split);
  ASSERT_TRUE(bytes.ok());
  auto back = splits.deserialize(1, *bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, split);
  EXPECT_EQ(splits.deserialize(2, *bytes).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(splits.deserialize(1, bytes->substr(0, bytes->size() - 1)).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(splits.deserialize(1, *bytes + "x").status().code(), absl::StatusCode::kDataLoss);

  BigtableScanEnumStateSerializer states;
  BigtableScanEnumState state{true, 5, {split, BigtableScanSplit{"range-4", R("x", "y")}}};
  auto state_bytes = states.serialize(state);
  ASSERT_TRUE(state_bytes.ok());
  auto state_back = states.deserialize(states.version(), *state_bytes);
  ASSERT_TRUE(state_back.ok()) << state_back.status();
  EXPECT_EQ(*state_back, state);
  for (std::size_t cut = 0; cut < state_bytes->size(); ++cut) {
    EXPECT_EQ(states.deserialize(states.version(), state_bytes->substr(0, cut)).status().code(),
              absl::StatusCode::kDataLoss)
        << "cut at " << cut;
  }
  std::string lying = *state_bytes;
  lying[1] = 1;  // split_count 1, below the two unassigned splits it holds
  for (int i = 2; i < 9; ++i) lying[i] = 0;
  EXPECT_EQ(states.deserialize(states.version(), lying).status().code(),
            absl::StatusCode::kDataLoss);
}

// Just enough of a coordinator to start an enumerator (nothing is assigned here).
class NoCoordinator final : public SplitEnumeratorContext<BigtableScanSplit> {
 public:
  int current_parallelism() const override { return 1; }
  std::vector<int> registered_readers() const override { return {}; }
  void assign_splits(int, std::vector<BigtableScanSplit>) override {}
  void signal_no_more_splits(int) override {}
  void send_event_to_source_reader(int, std::shared_ptr<const SourceEvent>) override {}
  void run_in_coordinator_thread(absl::AnyInvocable<void() &&>) override {}
  void run_on_worker(absl::AnyInvocable<void() &&>) override {}
  void fail_job(absl::Status) override {}
  MetricGroup& metric_group() override { return registry_.group({{"test", "enumerator"}}); }

 private:
  runtime::MetricRegistry registry_;
};

TEST(BigtableScanStateTest, ARestoreWithOtherRangesIsRefusedNamingBoth) {
  NoCoordinator context;
  BigtableScanEnumState state{true, 1, {BigtableScanSplit{"range-0", R("a", "m")}}, {R("a", "m")}};
  BigtableScanEnumerator changed(context, nullptr, kTableName, "", {R("m", "z")}, state);
  absl::Status refused = changed.start();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("planned for the ranges [a, m)"));
  EXPECT_THAT(refused.message(), HasSubstr("now reads [m, z)"));
  BigtableScanEnumerator same(context, nullptr, kTableName, "", {R("a", "m")}, state);
  EXPECT_TRUE(same.start().ok());
  auto snapshot = same.snapshot_state(1);
  ASSERT_TRUE(snapshot.ok());
  EXPECT_EQ(snapshot->ranges, (std::vector<RowKeyRange>{R("a", "m")}));
}

// --- Chunked rows -----------------------------------------------------------------------------

v2::ReadRowsResponse::CellChunk Chunk(std::string key, std::string family, std::string qualifier,
                                      std::int64_t ts, std::string value, int value_size = 0) {
  v2::ReadRowsResponse::CellChunk c;
  if (!key.empty()) c.set_row_key(key);
  if (!family.empty()) c.mutable_family_name()->set_value(family);
  if (!qualifier.empty()) c.mutable_qualifier()->set_value(qualifier);
  c.set_timestamp_micros(ts);
  c.set_value(value);
  c.set_value_size(value_size);
  return c;
}

absl::StatusOr<std::vector<BigtableRow>> Assemble(
    std::vector<v2::ReadRowsResponse::CellChunk> chunks) {
  ReadRowsAssembler assembler;
  v2::ReadRowsResponse response;
  for (auto& c : chunks) *response.add_chunks() = std::move(c);
  std::vector<BigtableRow> rows;
  absl::Status status = assembler.consume(response, [&](BigtableRow row) {
    rows.push_back(std::move(row));
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  if (assembler.mid_row()) return absl::UnavailableError("mid-row");
  return rows;
}

TEST(ReadRowsAssemblerTest, CellsAcrossChunksFamiliesCarriedOverAndBareCellsAreReassembled) {
  auto split = Chunk("r1", "cf", "a", 20, "hel", 5);
  auto rest = Chunk("", "", "", 0, "lo");
  auto older = Chunk("", "", "", 10, "old");  // same column, an older version
  auto other = Chunk("", "", "b", 5, "x");    // same family, another qualifier
  auto bare = Chunk("", "", "", 0, "");       // a cell of its own: timestamp 0, empty value
  bare.set_commit_row(true);
  auto next = Chunk("r2", "f2", "q", 1, "v");
  next.set_commit_row(true);
  auto rows = Assemble({split, rest, older, other, bare, next});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  const BigtableRow& r1 = (*rows)[0];
  EXPECT_EQ(r1.key, "r1");
  ASSERT_EQ(r1.cells.size(), 4u);
  EXPECT_EQ(r1.cells[0], (BigtableCell{"cf", "a", 20, "hello", {}}));
  EXPECT_EQ(r1.cells[1], (BigtableCell{"cf", "a", 10, "old", {}}));
  EXPECT_EQ(r1.cells[2], (BigtableCell{"cf", "b", 5, "x", {}}));
  EXPECT_EQ(r1.cells[3], (BigtableCell{"cf", "b", 0, "", {}}));
  EXPECT_EQ(r1.latest("cf", "a")->value, "hello");
  EXPECT_EQ(r1.cells_of("cf", "a").size(), 2u);
  EXPECT_EQ(r1.latest("cf", "zz"), nullptr);
  EXPECT_EQ((*rows)[1].cells[0], (BigtableCell{"f2", "q", 1, "v", {}}));
}

TEST(ReadRowsAssemblerTest, AResetDropsTheRowInProgressAndItComesAgainWhole) {
  auto partial = Chunk("r1", "cf", "a", 1, "stale");
  v2::ReadRowsResponse::CellChunk reset;
  reset.set_reset_row(true);
  auto whole = Chunk("r1", "cf", "a", 2, "fresh");
  whole.set_commit_row(true);
  auto rows = Assemble({partial, reset, whole});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 1u);
  ASSERT_EQ((*rows)[0].cells.size(), 1u);
  EXPECT_EQ((*rows)[0].cells[0].value, "fresh");
}

TEST(ReadRowsAssemblerTest, ProtocolViolationsAreInternalNamingTheRule) {
  v2::ReadRowsResponse::CellChunk reset;
  reset.set_reset_row(true);
  auto committed = [](v2::ReadRowsResponse::CellChunk c) {
    c.set_commit_row(true);
    return c;
  };
  struct Case {
    std::vector<v2::ReadRowsResponse::CellChunk> chunks;
    std::string rule;
  };
  const std::vector<Case> cases = {
      {{reset}, "reset_row outside a row"},
      {{committed(Chunk("r1", "cf", "a", 1, "x", 3))}, "commit_row in the middle of a value"},
      {{Chunk("r1", "cf", "a", 1, "x"), Chunk("r2", "cf", "a", 1, "x")}, "new row key"},
      {{committed(Chunk("r2", "cf", "a", 1, "x")), committed(Chunk("r1", "cf", "a", 1, "x"))},
       "out of order"},
      {{Chunk("r1", "", "a", 1, "x")}, "without a family and a qualifier"},
      {{Chunk("r1", "cf", "a", 1, "x"), Chunk("", "cf2", "", 1, "x")},
       "family name without a qualifier"},
      {{Chunk("", "cf", "a", 1, "x")}, "without a row key outside a row"},
      {{Chunk("r1", "cf", "a", 1, "x", 2), Chunk("r1", "", "", 0, "y")},
       "value continuation naming a cell"},
  };
  for (const Case& c : cases) {
    auto rows = Assemble(c.chunks);
    ASSERT_FALSE(rows.ok()) << c.rule;
    EXPECT_EQ(rows.status().code(), absl::StatusCode::kInternal) << c.rule;
    EXPECT_THAT(rows.status().message(), HasSubstr(c.rule));
  }
}

// --- The split reader against a scripted server ----------------------------------------------

std::string Key(int i) { return fmt::format("row-{:04d}", i); }

void PutRows(ScriptedBigtableReads& server, int n, std::size_t value_bytes = 8) {
  for (int i = 0; i < n; ++i) {
    server.put(Key(i),
               {"cf", "a", 1000, std::string(value_bytes, static_cast<char>('a' + i % 26))});
    server.put(Key(i), {"cf", "b", 1000, "b" + std::to_string(i)});
  }
}

BigtableScanRequest Request(int max_rows = 1000, std::size_t max_bytes = 8 << 20) {
  BigtableScanRequest r;
  r.table_name = "projects/p/instances/i/tables/t";
  r.max_rows_per_fetch = max_rows;
  r.max_bytes_per_fetch = max_bytes;
  r.initial_backoff = 1ms;
  return r;
}

// Fetches until the split finishes (or fails), with a deadline.
absl::StatusOr<std::vector<BigtableRow>> ReadAll(BigtableScanReader& reader,
                                                 std::vector<std::size_t>* batch_sizes = nullptr) {
  std::vector<BigtableRow> rows;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto batch = reader.fetch();
    if (!batch.ok()) return batch.status();
    for (auto& group : batch->splits) {
      if (batch_sizes != nullptr) batch_sizes->push_back(group.elements.size());
      for (auto& row : group.elements) rows.push_back(std::move(row));
    }
    if (!batch->finished_splits.empty()) return rows;
  }
  return absl::DeadlineExceededError(fmt::format("no finish in 20 s; {} rows read", rows.size()));
}

std::vector<std::string> Keys(const std::vector<BigtableRow>& rows) {
  std::vector<std::string> keys;
  for (const auto& r : rows) keys.push_back(r.key);
  return keys;
}

TEST(BigtableScanReaderTest, ReadsARangeWithValuesInPiecesAndResetsAndBoundsEachFetchByRows) {
  ScriptedBigtableReads server;
  PutRows(server, 30, 10);
  server.set_value_chunk_bytes(3);
  server.set_reset_every_row(true);
  BigtableScanReader reader(server.stubs(), Request(/*max_rows=*/4));
  ASSERT_TRUE(
      reader.handle_splits_addition({{BigtableScanSplit{"range-0", R(Key(5), Key(25))}}}).ok());
  std::vector<std::size_t> sizes;
  auto rows = ReadAll(reader, &sizes);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 20u);
  EXPECT_EQ(rows->front().key, Key(5));
  EXPECT_EQ(rows->back().key, Key(24));
  EXPECT_EQ(rows->front().latest("cf", "a")->value, std::string(10, 'f'));
  for (std::size_t n : sizes) EXPECT_LE(n, 4u);
  auto requests = server.read_requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].rows().row_ranges(0).start_key_closed(), Key(5));
  EXPECT_EQ(requests[0].rows().row_ranges(0).end_key_open(), Key(25));
  EXPECT_TRUE(reader.close().ok());
}

TEST(BigtableScanReaderTest, ByteBoundHandsALargerRowOverAlone) {
  ScriptedBigtableReads server;
  PutRows(server, 6, 100);
  BigtableScanReader reader(server.stubs(), Request(1000, /*max_bytes=*/50));
  ASSERT_TRUE(reader.handle_splits_addition({{BigtableScanSplit{"range-0", R("", "")}}}).ok());
  std::vector<std::size_t> sizes;
  auto rows = ReadAll(reader, &sizes);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->size(), 6u);
  for (std::size_t n : sizes) EXPECT_EQ(n, 1u) << "each row is above the byte bound";
  EXPECT_TRUE(reader.close().ok());
}

TEST(BigtableScanReaderTest, ATransientFailureMidRowReopensJustPastTheLastCompleteRow) {
  ScriptedBigtableReads server;
  PutRows(server, 20);
  server.set_value_chunk_bytes(2);
  server.fail_next_streams({{7, /*mid_row=*/true, {grpc::StatusCode::UNAVAILABLE, "cut"}},
                            {3, false, {grpc::StatusCode::DEADLINE_EXCEEDED, "slow"}}});
  BigtableScanReader reader(server.stubs(), Request());
  ASSERT_TRUE(reader.handle_splits_addition({{BigtableScanSplit{"range-0", R("", "")}}}).ok());
  auto rows = ReadAll(reader);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::vector<std::string> expected;
  for (int i = 0; i < 20; ++i) expected.push_back(Key(i));
  EXPECT_EQ(Keys(*rows), expected) << "every row once, in order, none partial";
  auto requests = server.read_requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_FALSE(requests[0].rows().row_ranges(0).has_start_key_closed());
  EXPECT_EQ(requests[1].rows().row_ranges(0).start_key_closed(), Key(6) + std::string(1, '\0'))
      << "the partly received row-0007 is asked for again; row-0006 is not";
  EXPECT_EQ(requests[2].rows().row_ranges(0).start_key_closed(), Key(9) + std::string(1, '\0'));
  EXPECT_TRUE(reader.close().ok());
}

TEST(BigtableScanReaderTest, AStalledStreamIsCancelledAndReopenedPastItsLastCompleteRow) {
  ScriptedBigtableReads server;
  PutRows(server, 12);
  ScriptedBigtableReads::Failure stall;
  stall.after_rows = 5;
  stall.mid_row = true;
  stall.stall = true;
  server.fail_next_streams({stall});
  auto request = Request();
  request.stall_timeout = 200ms;
  BigtableScanReader reader(server.stubs(), request);
  ASSERT_TRUE(reader.handle_splits_addition({{BigtableScanSplit{"range-0", R("", "")}}}).ok());
  auto rows = ReadAll(reader);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::vector<std::string> expected;
  for (int i = 0; i < 12; ++i) expected.push_back(Key(i));
  EXPECT_EQ(Keys(*rows), expected);
  auto requests = server.read_requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].rows().row_ranges(0).start_key_closed(), Key(4) + std::string(1, '\0'));
  EXPECT_TRUE(reader.close().ok());
}

TEST(BigtableScanReaderTest, APermanentFailureFailsTheReaderWithItsCodeNamingTheRange) {
  ScriptedBigtableReads server;
  PutRows(server, 5);
  server.fail_next_streams({{2, false, {grpc::StatusCode::NOT_FOUND, "family zz does not exist"}}});
  BigtableScanReader reader(server.stubs(), Request());
  ASSERT_TRUE(reader.handle_splits_addition({{BigtableScanSplit{"range-2", R("row", "")}}}).ok());
  auto rows = ReadAll(reader);
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(rows.status().message(), HasSubstr("range-2"));
  EXPECT_THAT(rows.status().message(), HasSubstr("family zz does not exist"));
  EXPECT_EQ(server.read_requests().size(), 1u) << "NOT_FOUND is not tried again";
  EXPECT_TRUE(reader.close().ok());
}

TEST(BigtableScanReaderTest, TransientFailuresWithoutProgressGiveUpAfterTheBound) {
  ScriptedBigtableReads server;
  PutRows(server, 5);
  std::vector<ScriptedBigtableReads::Failure> failures(12, ScriptedBigtableReads::Failure{});
  server.fail_next_streams(failures);
  auto request = Request();
  request.max_attempts_without_progress = 4;
  BigtableScanReader reader(server.stubs(), request);
  ASSERT_TRUE(reader.handle_splits_addition({{BigtableScanSplit{"range-0", R("", "")}}}).ok());
  auto rows = ReadAll(reader);
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(server.read_requests().size(), 4u);
  EXPECT_TRUE(reader.close().ok());
}

TEST(BigtableScanReaderTest, AUsedUpSplitFinishesWithoutACallBecauseAnEmptyRowSetReadsAll) {
  ScriptedBigtableReads server;
  PutRows(server, 5);
  BigtableScanReader reader(server.stubs(), Request());
  ASSERT_TRUE(reader
                  .handle_splits_addition(
                      {{BigtableScanSplit{"range-0", RangeAfter(SingleKeyRange(Key(3)), Key(3))}}})
                  .ok());
  auto rows = ReadAll(reader);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_TRUE(rows->empty());
  EXPECT_TRUE(server.read_requests().empty());
  EXPECT_TRUE(reader.close().ok());
}

TEST(BigtableScanReaderTest, CloseStopsAStreamBlockedOnAFullHandoff) {
  ScriptedBigtableReads server;
  PutRows(server, 200);
  BigtableScanReader reader(server.stubs(), Request(/*max_rows=*/2));
  ASSERT_TRUE(reader.handle_splits_addition({{BigtableScanSplit{"range-0", R("", "")}}}).ok());
  auto first = reader.fetch();
  ASSERT_TRUE(first.ok());
  std::this_thread::sleep_for(50ms);  // the stream fills the hand-off and waits
  EXPECT_TRUE(reader.close().ok());
}

// --- Whole jobs -------------------------------------------------------------------------------

BigtableSource<std::string>::Builder Builder(const ScriptedBigtableReads& server) {
  auto b = BigtableSource<std::string>::builder();
  b.table(connector::TableDestination::of("p", "i", "t"))
      .stub_factory(server.stubs())
      .initial_backoff_for_tests(1ms)
      .deserializer([](const BigtableRow& row, Collector<std::string>& out) -> absl::Status {
        out.collect(row.key);
        return absl::OkStatus();
      });
  return b;
}

TEST(BigtableSourceBuilderTest, NamesWhatIsMissingOrOutOfRange) {
  ScriptedBigtableReads server;
  auto message = [&](BigtableSource<std::string>::Builder b) {
    auto built = b.build();
    EXPECT_FALSE(built.ok());
    EXPECT_EQ(built.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(built.status().message());
  };
  EXPECT_THAT(message(BigtableSource<std::string>::builder()), HasSubstr("table(...)"));
  EXPECT_THAT(message(BigtableSource<std::string>::builder().table(
                  connector::TableDestination::of("p", "i", "t"))),
              HasSubstr("deserializer"));
  EXPECT_THAT(message(Builder(server).row_range("b", "a")), HasSubstr("[b, a) holds no row"));
  EXPECT_THAT(message(Builder(server).row_range("a", "a")), HasSubstr("holds no row"));
  EXPECT_THAT(message(Builder(server).app_profile_id("bad profile")), HasSubstr("app_profile_id"));
  v2::RowFilter big;
  big.set_value_regex_filter(std::string(30000, 'x'));
  EXPECT_THAT(message(Builder(server).filter(big)), HasSubstr("at most 20480"));
  EXPECT_THAT(message(Builder(server).max_rows_per_fetch(0)), HasSubstr("max_rows_per_fetch"));
  EXPECT_THAT(message(Builder(server).max_bytes_per_fetch(0)), HasSubstr("max_bytes_per_fetch"));
  EXPECT_THAT(message(Builder(server).row_key("")), HasSubstr("names no row"));
  EXPECT_THAT(message(Builder(server).row_key(std::string(5000, 'k'))), HasSubstr("at most 4096"));
  EXPECT_THAT(message(Builder(server).prefix(std::string(5000, 'k'))), HasSubstr("matches no row"));
  auto ok = Builder(server).prefix("user#1").prefix("user#").row_key("a").build();
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_THAT((*ok)->ranges(), ElementsAre(SingleKeyRange("a"), PrefixRange("user#")));
  auto all = Builder(server).build();
  ASSERT_TRUE(all.ok());
  EXPECT_THAT((*all)->ranges(), ElementsAre(R("", ""))) << "nothing added: the whole table";
}

TEST(BigtableSourceJobTest, EverySplitIsReadOnceAtAnyParallelismFromOneSampling) {
  for (int parallelism : {1, 3}) {
    ScriptedBigtableReads server;
    PutRows(server, 100);
    server.set_samples({Key(10), Key(40), Key(41), Key(90), ""});
    auto source = Builder(server).row_range(Key(5), Key(95)).prefix("zzz").build();
    ASSERT_TRUE(source.ok()) << source.status();
    auto seen = std::make_shared<std::multiset<std::string>>();
    auto mu = std::make_shared<std::mutex>();
    StreamExecutionEnvironment env;
    env.set_parallelism(parallelism);
    env.from_source(*source, WatermarkStrategy<std::string>::no_watermarks(), "bigtable")
        .sink_to(std::make_shared<ForEachSink<std::string>>([seen, mu](const std::string& v) {
                   std::lock_guard lock(*mu);
                   seen->insert(v);
                 }),
                 "seen");
    auto result = env.execute("bigtable-scan");
    ASSERT_TRUE(result.status.ok()) << result.status;
    EXPECT_EQ(seen->size(), 90u);
    for (int i = 5; i < 95; ++i) EXPECT_EQ(seen->count(Key(i)), 1u) << Key(i);
    EXPECT_EQ(result.metric("bigtable", "rowsRead"), 90);
    EXPECT_EQ(result.metric("bigtable", "rowKeySamplesTaken"), 1);
    EXPECT_EQ(result.metric("bigtable", "splitsAssigned"), 6) << "5 pieces + the zzz prefix";
    EXPECT_EQ(server.sample_calls(), 1);
    for (const auto& request : server.read_requests()) {
      EXPECT_EQ(request.rows().row_ranges_size(), 1) << "never an empty row set";
    }
  }
}

TEST(BigtableSourceJobTest, ARowWithoutRecordsIsSkippedAndADeserializerFailureFailsTheJob) {
  ScriptedBigtableReads server;
  PutRows(server, 10);
  auto evens = Builder(server)
                   .deserializer([](const BigtableRow& row, Collector<std::string>& out) {
                     if ((row.key.back() - '0') % 2 == 0) out.collect(row.key);
                     return absl::OkStatus();
                   })
                   .build();
  ASSERT_TRUE(evens.ok());
  auto seen = std::make_shared<std::vector<std::string>>();
  StreamExecutionEnvironment env;
  env.from_source(*evens, WatermarkStrategy<std::string>::no_watermarks(), "bigtable")
      .sink_to(std::make_shared<ForEachSink<std::string>>(
                   [seen](const std::string& v) { seen->push_back(v); }),
               "seen");
  auto result = env.execute("skip");
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(seen->size(), 5u);
  EXPECT_EQ(result.metric("bigtable", "recordsSkipped"), 5);

  auto failing =
      Builder(server)
          .deserializer([](const BigtableRow& row, Collector<std::string>&) {
            return row.key == Key(3) ? absl::InvalidArgumentError("bad cell") : absl::OkStatus();
          })
          .build();
  ASSERT_TRUE(failing.ok());
  StreamExecutionEnvironment env2;
  env2.from_source(*failing, WatermarkStrategy<std::string>::no_watermarks(), "bigtable")
      .sink_to(std::make_shared<ForEachSink<std::string>>([](const std::string&) {}), "seen");
  auto failed = env2.execute("fail");
  ASSERT_FALSE(failed.status.ok());
  EXPECT_EQ(failed.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(failed.status.message(), HasSubstr("row-0003"));
  EXPECT_THAT(failed.status.message(), HasSubstr("bad cell"));
}

TEST(BigtableSourceJobTest, ARestartResumesPastTheRowsAlreadyHandedOverWithoutSamplingAgain) {
  ScriptedBigtableReads server;
  PutRows(server, 400);
  server.set_samples({Key(100), Key(200), Key(300)});
  auto source = Builder(server).max_rows_per_fetch(10).build();
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
  env.from_source(*source, WatermarkStrategy<std::string>::no_watermarks(), "bigtable")
      .map(
          [failed](const std::string& v) {
            std::this_thread::sleep_for(200us);  // 20 ms a split: checkpoints inside each
            if (v == Key(250) && !failed->exchange(true)) throw std::runtime_error("injected");
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
  EXPECT_EQ(seen->size(), 400u) << "no row lost";
  EXPECT_EQ(server.sample_calls(), 1) << "a restore does not sample the table again";
  // The split in flight (range-2: row-0200 .. row-0299) is opened again past rows already
  // emitted before the failure: resumed, not restarted.
  std::vector<std::string> range2_starts;
  for (const auto& request : server.read_requests()) {
    const auto& r = request.rows().row_ranges(0);
    if (r.start_key_closed() >= Key(200) && r.start_key_closed() < Key(300)) {
      range2_starts.push_back(r.start_key_closed());
    }
  }
  ASSERT_EQ(range2_starts.size(), 2u);
  EXPECT_EQ(range2_starts[0], Key(200));
  EXPECT_GT(range2_starts[1], Key(200)) << "the restored split starts past emitted rows";
  EXPECT_LE(range2_starts[1], Key(250) + std::string(1, '\0'));
  EXPECT_EQ((*seen)[Key(100)], 1) << "a finished split is not read again";
  for (int i = 0; i < 200; ++i) EXPECT_EQ((*seen)[Key(i)], 1) << Key(i);
}

TEST(BigtableSourceJobTest, LineageNamesTheTable) {
  ScriptedBigtableReads server;
  auto source = Builder(server).build();
  ASSERT_TRUE(source.ok());
  LineageVertex v = (*source)->lineage_vertex();
  EXPECT_EQ(v.role, LineageVertex::Role::kSource);
  EXPECT_TRUE(v.bounded);
  ASSERT_EQ(v.datasets.size(), 1u);
  EXPECT_EQ(v.datasets[0].name_space, "bigtable://p/i");
  EXPECT_EQ(v.datasets[0].name, "t");
}

}  // namespace
}  // namespace gcpstream::bigtable
