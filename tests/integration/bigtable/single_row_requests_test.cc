// Single-row requests (CheckAndMutateRow, ReadModifyWriteRow) through the async surface, in
// jobs, against the Bigtable emulator. Semantics followed: Bigtable's CheckAndMutateRow and
// ReadModifyWriteRow reference (predicate filter; true/false mutations; append and 8-byte
// big-endian increment rules, the response carrying the changed cells).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "gcpstream/bigtable/requests/bigtable_request_async.h"
#include "gcpstream/bigtable/requests/single_row_sink.h"
#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "tests/support/bigtable_emulator.h"
#include "tests/support/emulators.h"

namespace gcpstream::bigtable {
namespace {

using namespace std::chrono_literals;
using connector::TableDestination;
using testing::BigtableTableName;
using testing::Emulator;

constexpr char kProject[] = "single-row-it";
constexpr char kInstance[] = "inst";

struct Change {
  std::string row;
  std::string expected;  // the value the newest "profile:name" must hold
  std::string next;
};

// Runs inputs 0..n-1 through `requests` (unordered) into a collecting sink: the job's result
// and what reached the sink.
template <typename Async>
std::pair<runtime::JobResult, std::vector<typename Async::Output>> RunNumbers(const Async& requests,
                                                                              std::int64_t n) {
  StreamExecutionEnvironment env;
  env.set_parallelism(1);
  auto sink = std::make_shared<CollectSink<typename Async::Output>>();
  auto input = env.from_source(std::make_shared<NumberSequenceSource>(0, n - 1, 1),
                               WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers");
  auto results = requests.unordered_wait(input, 30s);
  EXPECT_TRUE(results.ok()) << results.status();
  if (!results.ok()) return {runtime::JobResult{results.status()}, {}};
  results->sink_to(sink);
  auto job = env.execute("single-row");
  return {std::move(job), sink->collected()->snapshot()};
}

class SingleRowRequestsIT : public ::testing::Test {
 protected:
  void SetUp() override {
    endpoint_ = testing::EmulatorEndpoint(Emulator::kBigtable);
    ASSERT_FALSE(endpoint_.empty());
    client_ = std::make_unique<testing::BigtableEmulatorClient>(endpoint_);
    table_ = testing::UniqueId("t");
    google::bigtable::admin::v2::ColumnFamily keep;
    keep.mutable_gc_rule()->set_max_num_versions(5);
    ASSERT_TRUE(
        client_->create_table(name(), {{"profile", keep}, {"activity", keep}, {"counters", keep}})
            .ok());
  }
  std::string name() const { return BigtableTableName(kProject, kInstance, table_); }
  void Seed(const std::string& row, const std::string& family, const std::string& qualifier,
            std::int64_t ts, const std::string& value) {
    google::bigtable::v2::MutateRowRequest r;
    r.set_table_name(name());
    r.set_row_key(row);
    auto* set = r.add_mutations()->mutable_set_cell();
    set->set_family_name(family);
    set->set_column_qualifier(qualifier);
    set->set_timestamp_micros(ts);
    set->set_value(value);
    ASSERT_TRUE(client_->mutate_row(r).ok());
  }
  // The newest value of family:qualifier in `row` ("" when absent).
  std::string Newest(const std::string& row, const std::string& family,
                     const std::string& qualifier) {
    auto rows = client_->read_rows(name());
    EXPECT_TRUE(rows.ok()) << rows.status();
    if (!rows.ok() || !rows->count(row)) return "";
    std::string value;
    std::int64_t newest = -1;
    for (const auto& c : rows->at(row)) {
      if (c.family == family && c.qualifier == qualifier && c.timestamp_micros > newest) {
        newest = c.timestamp_micros;
        value = c.value;
      }
    }
    return value;
  }

  std::string endpoint_;
  std::unique_ptr<testing::BigtableEmulatorClient> client_;
  std::string table_;
};

TEST_F(SingleRowRequestsIT, AConditionalRequestAppliesTheBranchItsPredicateSelects) {
  Seed("u0", "profile", "name", 1000, "Ada");
  Seed("u1", "profile", "name", 1000, "Bob");
  Seed("u2", "profile", "name", 1000, "Old");  // a historical value cannot satisfy it
  Seed("u2", "profile", "name", 2000, "New");
  const std::vector<Change> changes = {
      {"u0", "Ada", "Ada L."}, {"u1", "Zed", "X"}, {"u2", "Old", "Y"}, {"skip", "", ""}};
  auto conditional =
      BigtableConditionalAsync<Change>::builder()
          .table(TableDestination::of(kProject, kInstance, table_))
          .emulator_endpoint(endpoint_)
          .serializer([](const Change& c) -> std::optional<ConditionalRequest> {
            if (c.row == "skip") return std::nullopt;
            ConditionalRequest r(
                c.row, ConditionalFilter::latest_cell_value_equals("profile", "name", c.expected));
            r.on_match().set_cell("profile", "name", 3000, c.next);
            r.otherwise().set_cell("profile", "conflict", 3000, "expected " + c.expected);
            return r;
          })
          .build();
  ASSERT_TRUE(conditional.ok()) << conditional.status();
  StreamExecutionEnvironment env;
  env.set_parallelism(1);
  auto sink = std::make_shared<CollectSink<std::pair<Change, ConditionalResult>>>();
  auto input = env.from_source(std::make_shared<NumberSequenceSource>(0, 3, 1),
                               WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
                   .map([changes](std::int64_t i) { return changes[static_cast<std::size_t>(i)]; });
  auto results = conditional->ordered_wait(input, 30s);
  ASSERT_TRUE(results.ok()) << results.status();
  results->sink_to(sink);
  auto job = env.execute("conditional");
  ASSERT_TRUE(job.status.ok()) << job.status;

  auto out = sink->collected()->snapshot();
  ASSERT_EQ(out.size(), 3u) << "the skipped record emits nothing";
  EXPECT_EQ(out[0].first.row, "u0");
  EXPECT_TRUE(out[0].second.predicate_matched);
  EXPECT_TRUE(out[0].second.selected_branch_has_mutations);
  EXPECT_EQ(out[0].second.table_name, name());
  EXPECT_FALSE(out[1].second.predicate_matched);
  EXPECT_FALSE(out[2].second.predicate_matched) << "only the newest version is compared";
  EXPECT_EQ(Newest("u0", "profile", "name"), "Ada L.");
  EXPECT_EQ(Newest("u1", "profile", "name"), "Bob");
  EXPECT_EQ(Newest("u1", "profile", "conflict"), "expected Zed");
  EXPECT_EQ(Newest("u2", "profile", "name"), "New");
}

TEST_F(SingleRowRequestsIT, ReadModifyWriteAppendsAndIncrementsAndReturnsTheChangedCells) {
  auto requests =
      BigtableReadModifyWriteAsync<std::int64_t>::builder()
          .table(TableDestination::of(kProject, kInstance, table_))
          .emulator_endpoint(endpoint_)
          .serializer([](const std::int64_t& i) -> std::optional<ReadModifyWriteRequest> {
            ReadModifyWriteRequest r("account#" + std::to_string(i % 2));
            r.append("activity", "notes", "n" + std::to_string(i) + ";")
                .increment("counters", "balance", i)
                .increment("counters", "balance", 100);  // a later rule sees the earlier one
            return r;
          })
          .build();
  ASSERT_TRUE(requests.ok()) << requests.status();
  auto [job, out] = RunNumbers(*requests, 10);
  ASSERT_TRUE(job.status.ok()) << job.status;
  ASSERT_EQ(out.size(), 10u);
  for (const auto& [input, result] : out) {
    SCOPED_TRACE(::testing::Message() << "input " << input);
    EXPECT_EQ(result.row.key, "account#" + std::to_string(input % 2));
    ASSERT_EQ(result.row.cells.size(), 2u) << "one cell per changed column";
    for (const auto& cell : result.row.cells) {
      if (cell.family == "counters") {
        auto counter = DecodeCounter(cell.value);
        ASSERT_TRUE(counter.ok()) << counter.status();
        EXPECT_GE(*counter, input + 100);
      } else {
        EXPECT_EQ(cell.family, "activity");
        EXPECT_NE(cell.value.find("n" + std::to_string(input) + ";"), std::string::npos);
      }
    }
  }
  // Each account's final counter: its inputs plus 100 per request.
  auto even = DecodeCounter(Newest("account#0", "counters", "balance"));
  auto odd = DecodeCounter(Newest("account#1", "counters", "balance"));
  ASSERT_TRUE(even.ok() && odd.ok());
  EXPECT_EQ(*even, 0 + 2 + 4 + 6 + 8 + 500);
  EXPECT_EQ(*odd, 1 + 3 + 5 + 7 + 9 + 500);
  EXPECT_EQ(Newest("account#1", "activity", "notes").size(), std::string("n1;").size() * 5);
}

TEST_F(SingleRowRequestsIT, AnIncrementOfACellThatIsNotACounterFailsTheJobKeepingTheCode) {
  Seed("bad", "counters", "balance", 1000, "abc");
  auto requests = BigtableReadModifyWriteAsync<std::int64_t>::builder()
                      .table(TableDestination::of(kProject, kInstance, table_))
                      .emulator_endpoint(endpoint_)
                      .serializer([](const std::int64_t&) -> std::optional<ReadModifyWriteRequest> {
                        ReadModifyWriteRequest r("bad");
                        r.increment("counters", "balance", 1);
                        return r;
                      })
                      .build();
  ASSERT_TRUE(requests.ok()) << requests.status();
  auto [job, out] = RunNumbers(*requests, 1);
  ASSERT_FALSE(job.status.ok());
  // Measured: the emulator answers UNKNOWN "increment on non-64-bit value"; the code reaches
  // the job unchanged, with the service's message.
  EXPECT_EQ(job.status.code(), absl::StatusCode::kUnknown) << job.status;
  EXPECT_NE(job.status.message().find("non-64-bit"), std::string::npos) << job.status;
  EXPECT_NE(job.status.message().find("ReadModifyWriteRow"), std::string::npos) << job.status;
  EXPECT_NE(job.status.message().find(name()), std::string::npos) << job.status;
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(Newest("bad", "counters", "balance"), "abc") << "nothing applied";
}

TEST_F(SingleRowRequestsIT, TheSinksApplyEveryRecordOnceInAJobWithCheckpoints) {
  // Conditional: create each user row only if absent (the second record of a row finds it).
  auto insert_if_absent =
      BigtableConditionalSink<std::int64_t>::builder()
          .table(TableDestination::of(kProject, kInstance, table_))
          .emulator_endpoint(endpoint_)
          .serializer([](const std::int64_t& i) -> std::optional<ConditionalRequest> {
            ConditionalRequest r("user#" + std::to_string(i % 50),
                                 ConditionalFilter::cell_exists("profile", "created"));
            // A distinct version per record: a second creation would show as a second cell.
            r.otherwise().set_cell("profile", "created", (i + 1) * 1000, std::to_string(i));
            return r;
          })
          .build();
  ASSERT_TRUE(insert_if_absent.ok()) << insert_if_absent.status();
  // Read-modify-write: count every record per account.
  auto count = BigtableReadModifyWriteSink<std::int64_t>::builder()
                   .table(TableDestination::of(kProject, kInstance, table_))
                   .emulator_endpoint(endpoint_)
                   .serializer([](const std::int64_t& i) -> std::optional<ReadModifyWriteRequest> {
                     ReadModifyWriteRequest r("account#" + std::to_string(i % 7));
                     r.increment("counters", "n", 1);
                     return r;
                   })
                   .build();
  ASSERT_TRUE(count.ok()) << count.status();
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  env.enable_checkpointing(20ms);
  auto input = env.from_source(std::make_shared<NumberSequenceSource>(0, 699, 4),
                               WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers");
  input.sink_to(*insert_if_absent, "insert if absent");
  input.sink_to(*count, "count");
  auto job = env.execute("single-row-sinks");
  ASSERT_TRUE(job.status.ok()) << job.status;

  auto rows = client_->read_rows(name());
  ASSERT_TRUE(rows.ok()) << rows.status();
  for (int u = 0; u < 50; ++u) {
    const std::string key = "user#" + std::to_string(u);
    ASSERT_TRUE(rows->count(key)) << key << " was never created";
    int created = 0;
    for (const auto& c : rows->at(key)) created += c.qualifier == "created" ? 1 : 0;
    EXPECT_EQ(created, 1) << key << ": only the first record creates it";
  }
  std::int64_t total = 0;
  for (int a = 0; a < 7; ++a) {
    auto n = DecodeCounter(Newest("account#" + std::to_string(a), "counters", "n"));
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, 100) << "account " << a;
    total += *n;
  }
  EXPECT_EQ(total, 700);
}

}  // namespace
}  // namespace gcpstream::bigtable
