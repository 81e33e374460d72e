// The checkpoint-owned (staged) Bigtable sink against the Bigtable emulator: AddToCell counters
// on an INT64 Sum family stay exactly equal to their sums across a failure and restart (the
// replayed envelopes find their markers), and the target checks refuse a table without the
// marker family or with a GC rule on it before any write. Semantics followed: Bigtable's
// CheckAndMutateRow reference (predicate filter chain; false mutations applied atomically when
// it matches nothing) and AddToCell on aggregate families.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "gcpstream/bigtable/admin/table_create_options.h"
#include "gcpstream/bigtable/staged/bigtable_staged_sink.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "tests/support/bigtable_emulator.h"
#include "tests/support/emulators.h"

namespace gcpstream::bigtable {
namespace {

using namespace std::chrono_literals;
using connector::TableDestination;
using ::testing::HasSubstr;

constexpr char kProject[] = "staged-it";
constexpr char kInstance[] = "inst";

class StagedSinkIT : public ::testing::Test {
 protected:
  void SetUp() override {
    endpoint_ = testing::EmulatorEndpoint(testing::Emulator::kBigtable);
    ASSERT_FALSE(endpoint_.empty());
    client_ = std::make_unique<testing::BigtableEmulatorClient>(endpoint_);
    table_ = testing::UniqueId("staged");
  }
  std::string name() const { return testing::BigtableTableName(kProject, kInstance, table_); }
  void Create(bool with_marker, bool marker_gc) {
    TableCreateOptions o;
    o.column_family("sums", std::nullopt, ColumnFamilyType::kInt64Sum);
    std::map<std::string, google::bigtable::admin::v2::ColumnFamily> families = {
        {"sums", o.family_proto("sums")}};
    if (with_marker) {
      google::bigtable::admin::v2::ColumnFamily marker;
      if (marker_gc) marker.mutable_gc_rule()->set_max_num_versions(1);
      families["flink_commit"] = marker;
    }
    ASSERT_TRUE(client_->create_table(name(), families).ok());
  }
  std::shared_ptr<BigtableStagedSink<std::int64_t>> Sink() {
    BigtableStagedOptions options;
    options.marker_family = "flink_commit";
    auto sink = BigtableStagedSink<std::int64_t>::builder()
                    .table(TableDestination::of(kProject, kInstance, table_))
                    .app_profile_id("transactional")
                    .emulator_endpoint(endpoint_)
                    .staged_options(options)
                    .serializer(BigtableSerializationSchema<std::int64_t>::of(
                        [](const std::int64_t& n, const SinkWriterContext&) {
                          RowMutationEntry e("origin#" + std::to_string(n % 7));
                          e.add_to_cell("sums", "delayed", 0, AggregateValue::int64(1));
                          e.add_to_cell("sums", "minutes", 0, AggregateValue::int64(n));
                          return std::optional<RowMutationEntry>(std::move(e));
                        }))
                    .build();
    EXPECT_TRUE(sink.ok()) << sink.status();
    return sink.ok() ? *sink : nullptr;
  }
  runtime::JobResult Run(int n, bool fail_once) {
    StreamExecutionEnvironment env;
    env.set_parallelism(2);
    env.enable_checkpointing(20ms);
    env.config().restart_strategy.kind = runtime::RestartStrategyKind::kFixedDelay;
    env.config().restart_strategy.max_attempts = 3;
    env.config().restart_strategy.delay = 1ms;
    auto failed = std::make_shared<std::atomic<bool>>(!fail_once);
    env.from_source(std::make_shared<NumberSequenceSource>(0, n - 1, 2),
                    WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
        .map(
            [failed, n](const std::int64_t& v) {
              std::this_thread::sleep_for(100us);
              if (v == n * 3 / 4 && !failed->exchange(true)) throw std::runtime_error("injected");
              return v;
            },
            "slow")
        .sink_to(Sink(), "staged");
    return env.execute("staged-it");
  }
  // The INT64 sums of every row: row -> qualifier -> sum.
  std::map<std::string, std::map<std::string, std::int64_t>> Sums() {
    std::map<std::string, std::map<std::string, std::int64_t>> out;
    auto rows = client_->read_rows(name());
    EXPECT_TRUE(rows.ok()) << rows.status();
    if (!rows.ok()) return out;
    for (const auto& [row, cells] : *rows) {
      for (const auto& c : cells) {
        if (c.family != "sums") continue;
        std::int64_t v = 0;
        for (unsigned char byte : c.value) v = (v << 8) | byte;
        out[row][c.qualifier] += v;
      }
    }
    return out;
  }

  std::string endpoint_;
  std::unique_ptr<testing::BigtableEmulatorClient> client_;
  std::string table_;
};

TEST_F(StagedSinkIT, AggregateCountersStayExactThroughAFailureAndRestart) {
  Create(/*with_marker=*/true, /*marker_gc=*/false);
  constexpr int kN = 1400;
  auto result = Run(kN, /*fail_once=*/true);
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_GE(result.restarts, 1);
  auto sums = Sums();
  for (int k = 0; k < 7; ++k) {
    std::int64_t minutes = 0;
    for (int i = k; i < kN; i += 7) minutes += i;
    const std::string row = "origin#" + std::to_string(k);
    EXPECT_EQ(sums[row]["delayed"], kN / 7) << row;
    EXPECT_EQ(sums[row]["minutes"], minutes) << row;
  }
  auto rows = client_->read_rows(name());
  ASSERT_TRUE(rows.ok());
  std::size_t markers = 0;
  for (const auto& [row, cells] : *rows) {
    for (const auto& c : cells) markers += c.family == "flink_commit";
  }
  EXPECT_EQ(markers, static_cast<std::size_t>(kN)) << "one retained marker per envelope";
}

TEST_F(StagedSinkIT, AMissingOrGarbageCollectedMarkerFamilyIsRefusedBeforeAnyWrite) {
  for (bool gc : {false, true}) {
    table_ = testing::UniqueId("staged");
    Create(/*with_marker=*/gc, /*marker_gc=*/gc);
    auto result = Run(50, /*fail_once=*/false);
    ASSERT_FALSE(result.status.ok());
    EXPECT_EQ(result.status.code(), absl::StatusCode::kFailedPrecondition) << result.status;
    EXPECT_THAT(result.status.message(),
                HasSubstr(gc ? "has a GC rule" : "has no column family 'flink_commit'"));
    EXPECT_TRUE(Sums().empty()) << "nothing may be written to a target that failed its check";
  }
}

}  // namespace
}  // namespace gcpstream::bigtable
