// The Bigtable sink through its public builder against the Bigtable emulator, and through the
// fault proxy for the statuses the service answers but the emulator does not (measured and
// pinned below).
#include "gcpstream/bigtable/sink/bigtable_sink.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "gcpstream/bigtable/sink/failed_mutation.h"
#include "tests/fakes/fault_proxy.h"
#include "tests/support/bigtable_emulator.h"
#include "tests/support/emulators.h"
#include "tests/support/fake_contexts.h"

namespace gcpstream::bigtable {
namespace {

using namespace std::chrono_literals;
using connector::TableDestination;
using testing::BigtableCell;
using testing::BigtableTableName;
using testing::Emulator;
using testing::FaultRule;
using ::testing::HasSubstr;

constexpr char kProject[] = "sink-it";
constexpr char kInstance[] = "inst";

// One record: the table, the row, and what to do to it.
struct Change {
  std::string table;
  std::string row;
  std::string value;
  std::int64_t timestamp_micros = 1000;
  bool replace = false;  // delete the column's versions first, in the same entry
  std::int64_t add = 0;  // non-zero: add to the INT64 Sum cell "sum:n" instead
  std::string family = "f";
};

BigtableSerializationSchema<Change> Schema() {
  return BigtableSerializationSchema<Change>::of(
      [](const Change& c, const SinkWriterContext&) -> std::optional<RowMutationEntry> {
        RowMutationEntry e(c.row);
        if (c.add != 0) {
          e.add_to_cell("sum", "n", c.timestamp_micros, AggregateValue::int64(c.add));
          return e;
        }
        if (c.replace) e.delete_cells(c.family, "q");
        e.set_cell(c.family, "q", c.timestamp_micros, c.value);
        return e;
      });
}

std::vector<std::string> Values(const std::vector<BigtableCell>& cells) {
  std::vector<std::string> out;
  for (const auto& c : cells) out.push_back(c.value);
  return out;
}

class BigtableSinkIT : public ::testing::Test {
 protected:
  void SetUp() override {
    endpoint_ = testing::EmulatorEndpoint(Emulator::kBigtable);
    ASSERT_FALSE(endpoint_.empty());
    client_ = std::make_unique<testing::BigtableEmulatorClient>(endpoint_);
  }

  std::string name(const std::string& table) {
    return BigtableTableName(kProject, kInstance, table);
  }

  // An existing table with raw family "f" keeping `versions` versions.
  std::string Table(int versions = 5) {
    const std::string id = testing::UniqueId("t");
    google::bigtable::admin::v2::ColumnFamily f;
    f.mutable_gc_rule()->set_max_num_versions(versions);
    EXPECT_TRUE(client_->create_table(name(id), {{"f", f}}).ok());
    return id;
  }

  BigtableSink<Change>::Builder Builder(const std::string& endpoint) {
    auto b = BigtableSink<Change>::builder();
    b.destination_resolver([](const Change& c, const SinkWriterContext&) {
       return std::optional<TableDestination>(TableDestination::of(kProject, kInstance, c.table));
     })
        .serializer(Schema())
        .emulator_endpoint(endpoint);
    return b;
  }

  std::unique_ptr<SinkWriter<Change>> Writer(BigtableSink<Change>::Builder builder) {
    auto sink = builder.build();
    EXPECT_TRUE(sink.ok()) << sink.status();
    auto writer = (*sink)->create_writer(context_);
    EXPECT_TRUE(writer.ok()) << writer.status();
    return std::move(*writer);
  }

  std::map<std::string, std::vector<BigtableCell>> Rows(const std::string& table) {
    auto rows = client_->read_rows(name(table));
    EXPECT_TRUE(rows.ok()) << rows.status();
    return rows.ok() ? *rows : std::map<std::string, std::vector<BigtableCell>>{};
  }

  // The real gRPC clients, with a short client retry budget (the default is 10 minutes).
  std::shared_ptr<InstanceClientFactory> ShortRetryClients(const std::string& endpoint,
                                                           std::chrono::milliseconds total) {
    connector::ClientOptions client;
    EXPECT_TRUE(client.set_emulator_endpoint(endpoint).ok());
    MutateRowsRetrySettings retry;
    retry.initial_delay = 5ms;
    retry.max_delay = 50ms;
    retry.attempt_timeout = std::min<std::chrono::milliseconds>(total, 1s);
    retry.total_timeout = total;
    BatchingThresholds thresholds;
    return MakeGrpcInstanceClientFactory(client, "", thresholds, retry);
  }

  std::shared_ptr<connector::FailureHandler> Recording() {
    return connector::FailureHandler::custom([this](const connector::FailedElement& e) {
      handled_.push_back(dynamic_cast<const FailedMutation&>(e).row_key() + ": " +
                         std::string(absl::StatusCodeToString(e.status().code())));
      return absl::OkStatus();
    });
  }

  std::string endpoint_;
  std::unique_ptr<testing::BigtableEmulatorClient> client_;
  testing::TestMailbox mailbox_;
  testing::FakeWriterInitContext context_{mailbox_};
  SinkWriterContext ctx_;
  std::vector<std::string> handled_;
};

TEST_F(BigtableSinkIT, ExplicitTimestampsKeepEveryVersionAndAReplayOverwritesTheSameOne) {
  const std::string table = Table(/*versions=*/5);
  auto writer = Writer(Builder(endpoint_));
  for (int v = 1; v <= 3; ++v) {
    ASSERT_TRUE(writer->write({table, "row", "v" + std::to_string(v), v * 1000}, ctx_).ok());
  }
  ASSERT_TRUE(writer->flush(false).ok());
  // A replay of version 2 (same timestamp) is invisible.
  ASSERT_TRUE(writer->write({table, "row", "v2", 2000}, ctx_).ok());
  ASSERT_TRUE(writer->flush(false).ok());
  auto rows = Rows(table);
  ASSERT_EQ(rows.count("row"), 1u);
  EXPECT_EQ(Values(rows["row"]), (std::vector<std::string>{"v3", "v2", "v1"}))
      << "newest first, one cell per timestamp";
  EXPECT_EQ(rows["row"][0].timestamp_micros, 3000);
  EXPECT_EQ(context_.metric("numRecordsSend"), 4);
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(BigtableSinkIT, DeleteThenWriteInOneEntryReplacesTheColumnAtomically) {
  const std::string table = Table(/*versions=*/5);
  auto writer = Writer(Builder(endpoint_));
  ASSERT_TRUE(writer->write({table, "row", "old-1", 1000}, ctx_).ok());
  ASSERT_TRUE(writer->write({table, "row", "old-2", 2000}, ctx_).ok());
  ASSERT_TRUE(writer->flush(false).ok());
  Change replace{table, "row", "new", 5000};
  replace.replace = true;
  ASSERT_TRUE(writer->write(replace, ctx_).ok());
  absl::Status flushed = writer->flush(false);
  ASSERT_TRUE(flushed.ok()) << flushed;
  auto rows = Rows(table);
  EXPECT_EQ(Values(rows["row"]), std::vector<std::string>{"new"})
      << "every older version went, the new cell stayed";
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(BigtableSinkIT, AddToCellAccumulatesOnAnInt64SumFamily) {
  const std::string table = testing::UniqueId("agg");
  TableCreateOptions create;
  create.column_family("sum", std::nullopt, ColumnFamilyType::kInt64Sum);
  auto writer = Writer(Builder(endpoint_)
                           .create_disposition(CreateDisposition::kCreateIfNeeded)
                           .table_create_options(create));
  for (std::int64_t add : {5, 7, -2}) {
    Change c{table, "counter", "", 1000};
    c.add = add;
    ASSERT_TRUE(writer->write(c, ctx_).ok());
  }
  ASSERT_TRUE(writer->flush(false).ok());
  auto schema = client_->get_table(name(table));
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_TRUE(schema->column_families().at("sum").value_type().has_aggregate_type())
      << "created as an aggregate family";
  auto rows = Rows(table);
  ASSERT_EQ(rows["counter"].size(), 1u) << "one aggregate cell at the timestamp";
  const std::string& v = rows["counter"][0].value;
  ASSERT_EQ(v.size(), 8u) << "an INT64 Sum cell reads back as a big-endian int64";
  std::int64_t sum = 0;
  for (unsigned char byte : v) sum = (sum << 8) | byte;
  EXPECT_EQ(sum, 10);
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(BigtableSinkIT, DynamicDestinationsWriteEachRecordToItsTable) {
  const std::string a = Table();
  const std::string b = Table();
  context_.registry();  // metrics of this writer only
  auto writer = Writer(Builder(endpoint_).writer_options([] {
    BigtableWriterOptions o;
    o.per_destination_metrics = true;
    return o;
  }()));
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(writer->write({i % 2 == 0 ? a : b, "r" + std::to_string(i), "v"}, ctx_).ok());
  }
  ASSERT_TRUE(writer->flush(false).ok());
  auto rows_a = Rows(a);
  auto rows_b = Rows(b);
  EXPECT_EQ(rows_a.size(), 5u);
  EXPECT_EQ(rows_b.size(), 5u);
  EXPECT_EQ(rows_a.count("r0"), 1u);
  EXPECT_EQ(rows_b.count("r1"), 1u);
  EXPECT_EQ(context_.metric("destination." + a + ".recordsSend"), 5);
  EXPECT_EQ(context_.metric("activeClients"), 1) << "one client per instance, not per table";
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(BigtableSinkIT, AMissingTableIsCreatedWithItsFamiliesAndReceivesEveryRecord) {
  const std::string table = testing::UniqueId("auto");
  TableCreateOptions create;
  create.column_family("f", GcRule::union_of({GcRule::max_versions(2), GcRule::max_age(24h)}));
  auto writer = Writer(Builder(endpoint_)
                           .create_disposition(CreateDisposition::kCreateIfNeeded)
                           .table_create_options(create));
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(writer->write({table, "r" + std::to_string(i), "v"}, ctx_).ok());
  }
  ASSERT_TRUE(writer->flush(false).ok());
  EXPECT_EQ(context_.metric("tablesCreated"), 1);
  EXPECT_EQ(Rows(table).size(), 20u);
  auto schema = client_->get_table(name(table));
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(schema->column_families().at("f").gc_rule().union_().rules_size(), 2);
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(BigtableSinkIT, AMissingTableUnderCreateNeverFailsNamingTheDisposition) {
  auto writer = Writer(Builder(endpoint_).failed_mutation_handler(Recording()));
  ASSERT_TRUE(writer->write({testing::UniqueId("absent"), "r", "v"}, ctx_).ok());
  absl::Status s = writer->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("CREATE_NEVER"));
  EXPECT_TRUE(handled_.empty());
  ASSERT_TRUE(writer->close().ok());
}

// Where the emulator differs from the service (measured with google-cloud-cli 528.0.0; the
// service answers INVALID_ARGUMENT for the whole request, and NOT_FOUND for an unknown family).
// If these start failing, the emulator changed: revisit the fault-proxy tests below, which
// produce the service's statuses instead.
TEST_F(BigtableSinkIT, EmulatorDifferencesArePinned) {
  const std::string table = Table();
  google::bigtable::v2::MutateRowsRequest bad_timestamp;
  bad_timestamp.set_table_name(name(table));
  auto* entry = bad_timestamp.add_entries();
  entry->set_row_key("r");
  auto* set = entry->add_mutations()->mutable_set_cell();
  set->set_family_name("f");
  set->set_column_qualifier("q");
  set->set_timestamp_micros(1500);  // not a multiple of 1000
  auto result = client_->mutate_rows(bad_timestamp);
  EXPECT_TRUE(result.rpc.ok()) << "the stream ends OK: " << result.rpc.error_message();
  ASSERT_EQ(result.entries.count(0), 1u);
  EXPECT_EQ(result.entries[0].code(), 13)
      << "a non-multiple-of-1000 timestamp: per-entry INTERNAL inside MutateRows, where the "
         "service rejects the whole request with INVALID_ARGUMENT; got '"
      << result.entries[0].message() << "'";
  google::bigtable::v2::MutateRowRequest single;
  single.set_table_name(name(table));
  single.set_row_key("r");
  *single.add_mutations() = entry->mutations(0);
  EXPECT_EQ(client_->mutate_row(single).error_code(), grpc::StatusCode::UNKNOWN)
      << "the same mutation through MutateRow: UNKNOWN";

  google::bigtable::v2::MutateRowsRequest unknown_family = bad_timestamp;
  auto* m = unknown_family.mutable_entries(0)->mutable_mutations(0)->mutable_set_cell();
  m->set_family_name("nope");
  m->set_timestamp_micros(1000);
  result = client_->mutate_rows(unknown_family);
  EXPECT_TRUE(result.rpc.ok()) << "the stream ends OK: " << result.rpc.error_message();
  ASSERT_EQ(result.entries.count(0), 1u);
  EXPECT_EQ(result.entries[0].code(), 13) << "per-entry INTERNAL where the service says NOT_FOUND";

  // Through the sink, the emulator's INTERNAL is (correctly, for that code) fatal: it never
  // reaches a dropping handler and names the table.
  auto writer = Writer(Builder(endpoint_).failed_mutation_handler(Recording()));
  Change c{table, "r", "v"};
  c.family = "nope";
  ASSERT_TRUE(writer->write(c, ctx_).ok());
  absl::Status s = writer->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(table));
  EXPECT_TRUE(handled_.empty());
  ASSERT_TRUE(writer->close().ok());
}

class BigtableSinkFaultIT : public BigtableSinkIT {
 protected:
  void SetUp() override {
    BigtableSinkIT::SetUp();
    auto proxy = testing::FaultProxy::start(endpoint_);
    ASSERT_TRUE(proxy.ok()) << proxy.status();
    proxy_ = std::move(*proxy);
  }
  std::unique_ptr<testing::FaultProxy> proxy_;
};

TEST_F(BigtableSinkFaultIT, ABatchRejectedForOneEntryRoutesOnlyThatEntry) {
  const std::string table = Table();
  // The service's answer to a request holding one bad entry: INVALID_ARGUMENT for the whole
  // call (1st MutateRows). The isolation pass then sends each entry alone, in order; the 3rd
  // call is the bad entry's and gets the service's answer again.
  proxy_->add_rule({.method = "MutateRows",
                    .nth = 1,
                    .code = absl::StatusCode::kInvalidArgument,
                    .message = "Timestamp granularity mismatch"});
  proxy_->add_rule({.method = "MutateRows",
                    .nth = 3,
                    .code = absl::StatusCode::kInvalidArgument,
                    .message = "Timestamp granularity mismatch"});
  auto writer = Writer(Builder(proxy_->endpoint()).failed_mutation_handler(Recording()));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(writer->write({table, "r" + std::to_string(i), "v"}, ctx_).ok());
  }
  ASSERT_TRUE(writer->flush(false).ok());
  EXPECT_EQ(handled_, std::vector<std::string>{"r1: INVALID_ARGUMENT"});
  auto rows = Rows(table);
  EXPECT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows.count("r1"), 0u);
  EXPECT_EQ(proxy_->calls("MutateRows"), 4) << "one batch, then three entries alone";
  EXPECT_EQ(context_.metric("numRecordsSendErrors"), 1);
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(BigtableSinkFaultIT, AMissingDeclaredFamilyIsAddedAndTheEntriesReapplied) {
  // The table exists with "f" only; records write to "g", which the options declare. The
  // service answers NOT_FOUND for the entries (the emulator would say INTERNAL, see above).
  const std::string table = Table();
  proxy_->add_rule({.method = "MutateRows",
                    .nth = 1,
                    .code = absl::StatusCode::kNotFound,
                    .message = "Requested column family not found"});
  TableCreateOptions create;
  create.column_family("f").column_family("g");
  auto writer = Writer(Builder(proxy_->endpoint())
                           .create_disposition(CreateDisposition::kCreateIfNeeded)
                           .table_create_options(create));
  for (int i = 0; i < 3; ++i) {
    Change c{table, "r" + std::to_string(i), "v"};
    c.family = "g";
    ASSERT_TRUE(writer->write(c, ctx_).ok());
  }
  ASSERT_TRUE(writer->flush(false).ok());
  auto schema = client_->get_table(name(table));
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(schema->column_families().count("g"), 1u);
  EXPECT_EQ(context_.metric("columnFamiliesAdded"), 1);
  EXPECT_EQ(context_.metric("tablesCreated"), 0);
  auto rows = Rows(table);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows["r0"][0].family, "g");
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(BigtableSinkFaultIT, AnOutageFailsTheJobAndNeverReachesADroppingHandler) {
  const std::string table = Table();
  proxy_->add_rule({.method = "MutateRows",
                    .code = absl::StatusCode::kUnavailable,
                    .message = "connection refused"});
  auto writer = Writer(Builder(proxy_->endpoint())
                           .failed_mutation_handler(Recording())
                           .clients(ShortRetryClients(proxy_->endpoint(), 500ms)));
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(writer->write({table, "r" + std::to_string(i), "v"}, ctx_).ok());
  absl::Status s = writer->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(handled_.empty()) << "an outage was dropped: " << handled_.front();
  EXPECT_GT(proxy_->calls("MutateRows"), 1) << "the client retried before giving up";
  ASSERT_TRUE(writer->close().ok());
}

TEST_F(BigtableSinkFaultIT, AStalledMutateRowsIsReportedThenEndedByTheClientDeadline) {
  const std::string table = Table();
  proxy_->add_rule({.method = "MutateRows", .action = FaultRule::Action::kHang});
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  spdlog::default_logger()->sinks().push_back(ring);
  BigtableWriterOptions options;
  options.stall_warning_interval = 200ms;
  auto writer = Writer(Builder(proxy_->endpoint())
                           .writer_options(options)
                           .clients(ShortRetryClients(proxy_->endpoint(), 1500ms)));
  ASSERT_TRUE(writer->write({table, "r", "v"}, ctx_).ok());
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = writer->flush(false);
  const auto waited = std::chrono::steady_clock::now() - start;
  auto& sinks = spdlog::default_logger()->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), ring), sinks.end());
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_GE(waited, 1s) << "the flush waited for the client's deadline";
  std::string warnings;
  for (const auto& line : ring->last_formatted()) warnings += line;
  EXPECT_THAT(warnings, HasSubstr("Bigtable"));
  EXPECT_THAT(warnings, HasSubstr("flushing for a checkpoint"));
  EXPECT_THAT(warnings, HasSubstr("1 live tables"));
  ASSERT_TRUE(writer->close().ok());
}

}  // namespace
}  // namespace gcpstream::bigtable
