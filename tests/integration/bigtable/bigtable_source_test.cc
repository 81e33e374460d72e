// The Bigtable scan source through its public builder against the Bigtable emulator: the
// configured ranges, prefixes, keys and filter reach the ReadRows the readers send, every row is
// read once at parallelism 2, and large cells arrive whole. Semantics followed: Bigtable's
// ReadRows (RowSet ranges, RowFilter chain) and SampleRowKeys reference. The emulator samples
// about one key per 100 rows plus the last key (../shared/notes/emulators.md), so a 1,000-row
// table plans several splits here, unlike a real table held in one tablet.
#include "gcpstream/bigtable/source/bigtable_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <string>

#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "tests/support/bigtable_emulator.h"
#include "tests/support/emulators.h"

namespace gcpstream::bigtable {
namespace {

namespace v2 = google::bigtable::v2;
using connector::TableDestination;
using testing::BigtableTableName;
using testing::Emulator;
using ::testing::HasSubstr;

constexpr char kProject[] = "scan-it";
constexpr char kInstance[] = "inst";

std::string Key(int i) { return fmt::format("row-{:04d}", i); }

// What a job read: each row key with the cells it carried (family:qualifier=value).
struct Read {
  runtime::JobResult result;
  std::multiset<std::string> rows;
  // Written by the deserializer, which runs on every reader subtask's thread at once: guarded.
  std::mutex mu;
  std::map<std::string, std::vector<std::string>> cells;
};

class BigtableSourceIT : public ::testing::Test {
 protected:
  void SetUp() override {
    endpoint_ = testing::EmulatorEndpoint(Emulator::kBigtable);
    ASSERT_FALSE(endpoint_.empty());
    client_ = std::make_unique<testing::BigtableEmulatorClient>(endpoint_);
    table_ = testing::UniqueId("scan");
    google::bigtable::admin::v2::ColumnFamily family;
    family.mutable_gc_rule()->set_max_num_versions(3);
    ASSERT_TRUE(client_->create_table(name(), {{"cf", family}, {"meta", family}}).ok());
  }
  std::string name() const { return BigtableTableName(kProject, kInstance, table_); }

  void Write(int n) {
    for (int start = 0; start < n; start += 500) {
      v2::MutateRowsRequest request;
      request.set_table_name(name());
      for (int i = start; i < std::min(n, start + 500); ++i) {
        auto* entry = request.add_entries();
        entry->set_row_key(Key(i));
        auto set = [&](const std::string& family, const std::string& qualifier,
                       const std::string& value) {
          auto* cell = entry->add_mutations()->mutable_set_cell();
          cell->set_family_name(family);
          cell->set_column_qualifier(qualifier);
          cell->set_timestamp_micros(1000);
          cell->set_value(value);
        };
        set("cf", "a", std::to_string(i));
        set("cf", "b", "b" + std::to_string(i));
        set("meta", "m", "m");
      }
      auto result = client_->mutate_rows(request);
      ASSERT_TRUE(result.rpc.ok()) << result.rpc.error_message();
    }
  }

  BigtableSource<std::string>::Builder Builder(std::shared_ptr<Read> read) {
    auto b = BigtableSource<std::string>::builder();
    b.table(TableDestination::of(kProject, kInstance, table_))
        .emulator_endpoint(endpoint_)
        .deserializer([read](const BigtableRow& row, Collector<std::string>& out) -> absl::Status {
          std::vector<std::string> cells;
          for (const auto& c : row.cells) {
            cells.push_back(
                c.family + ":" + c.qualifier + "=" +
                (c.value.size() > 64 ? std::to_string(c.value.size()) + " bytes" : c.value));
          }
          {
            std::lock_guard lock(read->mu);
            read->cells[row.key] = std::move(cells);
          }
          out.collect(row.key);
          return absl::OkStatus();
        });
    return b;
  }

  void Run(const std::shared_ptr<BigtableSource<std::string>>& source, Read& read,
           int parallelism) {
    auto mu = std::make_shared<std::mutex>();
    auto rows = std::make_shared<std::multiset<std::string>>();
    StreamExecutionEnvironment env;
    env.set_parallelism(parallelism);
    env.from_source(source, WatermarkStrategy<std::string>::no_watermarks(), "bigtable")
        .sink_to(std::make_shared<ForEachSink<std::string>>([rows, mu](const std::string& key) {
                   std::lock_guard lock(*mu);
                   rows->insert(key);
                 }),
                 "rows");
    read.result = env.execute("bigtable-scan-it");
    read.rows = *rows;
  }

  std::string endpoint_;
  std::unique_ptr<testing::BigtableEmulatorClient> client_;
  std::string table_;
};

TEST_F(BigtableSourceIT, ReadsEveryRowOnceAtParallelismTwoFromSeveralSampledSplits) {
  Write(1000);
  auto read = std::make_shared<Read>();
  auto source = Builder(read).max_rows_per_fetch(64).build();
  ASSERT_TRUE(source.ok()) << source.status();
  Run(*source, *read, 2);
  ASSERT_TRUE(read->result.status.ok()) << read->result.status;
  EXPECT_EQ(read->rows.size(), 1000u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(read->rows.count(Key(i)), 1u) << Key(i);
  // Families come grouped in no particular order (the emulator sent meta first); qualifiers
  // within a family in order.
  EXPECT_THAT(read->cells[Key(7)],
              ::testing::UnorderedElementsAre("cf:a=7", "cf:b=b7", "meta:m=m"));
  EXPECT_EQ(read->result.metric("bigtable", "rowsRead"), 1000);
  EXPECT_EQ(read->result.metric("bigtable", "rowKeySamplesTaken"), 1);
  EXPECT_GT(read->result.metric("bigtable", "splitsAssigned"), 1)
      << "the emulator samples about every 100th key";
}

TEST_F(BigtableSourceIT, RangesPrefixesKeysAndTheFilterReachTheReadRowsSent) {
  Write(1000);
  auto read = std::make_shared<Read>();
  v2::RowFilter filter;
  auto* chain = filter.mutable_chain();
  chain->add_filters()->set_family_name_regex_filter("cf");
  chain->add_filters()->set_column_qualifier_regex_filter("a");
  auto source = Builder(read)
                    .prefix("row-01")               // 100 rows
                    .prefix("row-015")              // nested: merged, not read twice
                    .row_range(Key(500), Key(510))  // 10 rows
                    .row_range(Key(505), Key(512))  // overlapping: 2 more
                    .row_key(Key(999))
                    .filter(filter)
                    .build();
  ASSERT_TRUE(source.ok()) << source.status();
  Run(*source, *read, 2);
  ASSERT_TRUE(read->result.status.ok()) << read->result.status;
  EXPECT_EQ(read->rows.size(), 113u);
  for (int i = 100; i < 200; ++i) EXPECT_EQ(read->rows.count(Key(i)), 1u) << Key(i);
  for (int i = 500; i < 512; ++i) EXPECT_EQ(read->rows.count(Key(i)), 1u) << Key(i);
  EXPECT_EQ(read->rows.count(Key(999)), 1u);
  EXPECT_EQ(read->rows.count(Key(99)), 0u);
  EXPECT_EQ(read->cells[Key(150)], (std::vector<std::string>{"cf:a=150"}))
      << "the filter is applied by the service";
}

TEST_F(BigtableSourceIT, LargeCellsArriveWholeAndARangeWithoutRowsFinishes) {
  v2::MutateRowsRequest request;
  request.set_table_name(name());
  for (int i = 0; i < 4; ++i) {
    auto* entry = request.add_entries();
    entry->set_row_key(Key(i));
    auto* cell = entry->add_mutations()->mutable_set_cell();
    cell->set_family_name("cf");
    cell->set_column_qualifier("big");
    cell->set_timestamp_micros(1000);
    cell->set_value(std::string((3 << 20) + i, static_cast<char>('a' + i)));
  }
  ASSERT_TRUE(client_->mutate_rows(request).rpc.ok());
  auto read = std::make_shared<Read>();
  auto source =
      Builder(read).max_bytes_per_fetch(1 << 20).row_range("", Key(4)).prefix("zz").build();
  ASSERT_TRUE(source.ok());
  Run(*source, *read, 1);
  ASSERT_TRUE(read->result.status.ok()) << read->result.status;
  EXPECT_EQ(read->rows.size(), 4u);
  EXPECT_EQ(read->cells[Key(2)],
            (std::vector<std::string>{"cf:big=" + std::to_string((3 << 20) + 2) + " bytes"}));
}

TEST_F(BigtableSourceIT, AMissingTableFailsTheJobWithNotFound) {
  auto read = std::make_shared<Read>();
  auto source = BigtableSource<std::string>::builder()
                    .table(TableDestination::of(kProject, kInstance, "no-such-table"))
                    .emulator_endpoint(endpoint_)
                    .deserializer([](const BigtableRow&, Collector<std::string>&) {
                      return absl::OkStatus();
                    })
                    .build();
  ASSERT_TRUE(source.ok());
  Run(*source, *read, 1);
  ASSERT_FALSE(read->result.status.ok());
  EXPECT_EQ(read->result.status.code(), absl::StatusCode::kNotFound) << read->result.status;
  EXPECT_THAT(read->result.status.message(), HasSubstr("no-such-table"));
}

}  // namespace
}  // namespace gcpstream::bigtable
