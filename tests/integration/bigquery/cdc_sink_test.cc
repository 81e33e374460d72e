// CDC writes through the at-least-once BigQuery sink against the BigQuery fake. The fake
// follows the BigQuery docs "Stream table updates with change data capture": _CHANGE_TYPE
// UPSERT / DELETE by primary key on the default stream, _CHANGE_SEQUENCE_NUMBER ordering the
// changes of one key, and a table that must declare its primary key. The sink checks that
// contract before a table's first row and creates a missing table with the declared key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "gcpstream/bigquery/sink/bigquery_sink.h"
#include "tests/fakes/bigquery/bigquery_fake.h"
#include "tests/support/fake_contexts.h"

namespace gcpstream::bigquery {
namespace {

using connector::BigQueryTableDestination;
using ::testing::HasSubstr;

const BigQueryTableDestination kTable = BigQueryTableDestination::of("p", "d", "staff");

// One change of the source table: the row, what happened to it, and its order.
struct Change {
  std::int64_t id = 0;
  std::string name;
  std::int64_t salary = 0;
  ChangeType type = ChangeType::kUpsert;
  std::string sequence;  // empty: none
};

TableSchema Schema() {
  return *TableSchemaFromJson(nlohmann::json::parse(R"([
    {"name": "id", "type": "INT64", "mode": "REQUIRED"},
    {"name": "name", "type": "STRING"},
    {"name": "salary", "type": "INT64"}])"));
}

class BigQueryCdcSinkIT : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fake = testing::BigQueryFake::Start();
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = std::move(*fake);
    ASSERT_TRUE(fake_->add_dataset("p", "d").ok());
  }

  void add_table(const std::vector<std::string>& key) {
    nlohmann::json resource = {{"tableReference", {{"tableId", kTable.table}}},
                               {"schema", {{"fields", TableSchemaToJson(Schema())}}}};
    if (!key.empty()) resource["tableConstraints"] = {{"primaryKey", {{"columns", key}}}};
    const absl::Status added = fake_->add_table("p", "d", resource);
    ASSERT_TRUE(added.ok()) << added;
  }

  BigQuerySink<Change>::Builder builder(bool with_sequence) {
    auto serializer = BigQuerySerializationSchema<Change>::json(Schema(), [](const Change& c) {
      return absl::StatusOr<std::optional<nlohmann::json>>(
          nlohmann::json{{"id", c.id}, {"name", c.name}, {"salary", c.salary}});
    });
    EXPECT_TRUE(serializer.ok()) << serializer.status();
    CdcOptions<Change> cdc;
    cdc.change_type = [](const Change& c) { return absl::StatusOr<ChangeType>(c.type); };
    if (with_sequence) {
      cdc.sequence_number = [](const Change& c) { return absl::StatusOr<std::string>(c.sequence); };
    }
    auto b = BigQuerySink<Change>::builder();
    b.destination(kTable)
        .serializer(*serializer)
        .cdc_options(std::move(cdc))
        .emulator_endpoint(fake_->grpc_endpoint())
        .emulator_rest_endpoint(fake_->rest_endpoint());
    return b;
  }

  // Writes `changes` (one append per flush_every changes) and flushes; the first failure.
  // `append_retries`, when set, receives the writer's appendRetries.
  absl::Status write(const std::shared_ptr<BigQuerySink<Change>>& sink,
                     const std::vector<Change>& changes, int flush_every = 1000,
                     std::int64_t* append_retries = nullptr) {
    testing::TestMailbox mailbox;
    testing::FakeWriterInitContext context(mailbox);
    auto w = sink->create_writer(context);
    if (!w.ok()) return w.status();
    SinkWriterContext ctx;
    int n = 0;
    absl::Status status;
    for (const Change& c : changes) {
      status = (*w)->write(c, ctx);
      if (status.ok() && ++n % flush_every == 0) status = (*w)->flush(false);
      if (!status.ok()) break;
    }
    if (status.ok()) status = (*w)->flush(false);
    const absl::Status closed = (*w)->close();
    if (append_retries != nullptr) *append_retries = context.metric("appendRetries");
    return status.ok() ? closed : status;
  }

  // id -> (name, salary) of the visible rows; a duplicate id fails the test.
  std::map<std::int64_t, std::pair<std::string, std::int64_t>> table() {
    std::map<std::int64_t, std::pair<std::string, std::int64_t>> out;
    auto rows = fake_->rows(kTable.resource_name());
    EXPECT_TRUE(rows.ok()) << rows.status();
    if (!rows.ok()) return out;
    for (const auto& r : *rows) {
      EXPECT_FALSE(r.contains("_CHANGE_TYPE")) << r.dump();
      const std::int64_t id = std::stoll(r["id"].get<std::string>());
      const bool fresh = out.emplace(id, std::pair(r["name"].get<std::string>(),
                                                   std::stoll(r["salary"].get<std::string>())))
                             .second;
      EXPECT_TRUE(fresh) << "key " << id << " is visible twice";
    }
    return out;
  }

  std::unique_ptr<testing::BigQueryFake> fake_;
};

TEST_F(BigQueryCdcSinkIT, UpsertsAndDeletesApplyByPrimaryKeyAsTheCdcDocsExample) {
  // The example of the BigQuery CDC docs: three rows, then DELETE 100, UPSERT 101, UPSERT 105.
  add_table({"id"});
  auto sink = builder(false).build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  ASSERT_TRUE(write(*sink, {{100, "Charlie", 2000}, {101, "Tal", 3000}, {102, "Lee", 5000}}).ok());
  ASSERT_TRUE(
      write(*sink, {{100, "", 0, ChangeType::kDelete}, {101, "Tal", 8000}, {105, "Izumi", 6000}})
          .ok());
  using Row = std::pair<std::string, std::int64_t>;
  EXPECT_EQ(table(), (std::map<std::int64_t, Row>{
                         {101, {"Tal", 8000}}, {102, {"Lee", 5000}}, {105, {"Izumi", 6000}}}));
}

TEST_F(BigQueryCdcSinkIT, TheHighestSequenceNumberWinsWhateverTheArrivalOrder) {
  add_table({"id"});
  auto sink = builder(true).build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  // Key 1: the newest change (section 2 larger) arrives first, then two older ones, each in its
  // own append. Key 2: deleted at sequence 5, then a late upsert at 4 must stay ignored.
  // Key 3: lowercase hex is canonicalized and compared as numbers (a0 > 9f).
  std::vector<Change> changes = {
      {1, "newest", 3, ChangeType::kUpsert, "1/2"},
      {1, "older", 2, ChangeType::kUpsert, "1/1"},
      {1, "oldest", 1, ChangeType::kUpsert, "0/FFFFFFFFFFFFFFFF"},
      {2, "kept?", 1, ChangeType::kUpsert, "3"},
      {2, "", 0, ChangeType::kDelete, "5"},
      {2, "late", 2, ChangeType::kUpsert, "4"},
      {3, "a0", 1, ChangeType::kUpsert, "a0"},
      {3, "9f", 2, ChangeType::kUpsert, "9f"},
      // Keys 4 and 5: the numeric order disagrees with the text order ("A" > "10" as text but
      // 10 < 16; "2/0" > "10" as text but 2 < 16).
      {4, "sixteen", 1, ChangeType::kUpsert, "10"},
      {4, "ten", 2, ChangeType::kUpsert, "A"},
      {5, "two", 1, ChangeType::kUpsert, "2/0"},
      {5, "sixteen", 2, ChangeType::kUpsert, "10"},
  };
  ASSERT_TRUE(write(*sink, changes, /*flush_every=*/1).ok());
  using Row = std::pair<std::string, std::int64_t>;
  EXPECT_EQ(table(),
            (std::map<std::int64_t, Row>{
                {1, {"newest", 3}}, {3, {"a0", 1}}, {4, {"sixteen", 1}}, {5, {"sixteen", 2}}}));
}

TEST_F(BigQueryCdcSinkIT, ARetriedAppendAppliesTheSameChangeOnceInEffect) {
  // The response of the second append is lost after it was applied: the client re-appends the
  // same changes. An upsert twice, or a delete twice, leaves the same table.
  add_table({"id"});
  testing::FakeOptions faults;
  faults.lose_response_on_append = 2;
  fake_->set_options(faults);
  auto b = builder(true);
  BigQueryWriterOptions options;
  options.retry_initial_delay = std::chrono::milliseconds(10);
  b.writer_options(options);
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  std::int64_t retries = 0;
  ASSERT_TRUE(write(*sink,
                    {{1, "a", 1, ChangeType::kUpsert, "1"},
                     {2, "b", 2, ChangeType::kUpsert, "2"},
                     {1, "a2", 3, ChangeType::kUpsert, "3"},
                     {2, "", 0, ChangeType::kDelete, "4"},
                     {3, "c", 5, ChangeType::kUpsert, "5"}},
                    /*flush_every=*/2, &retries)
                  .ok());
  EXPECT_GE(retries, 1) << "the lost response was never re-appended";
  EXPECT_EQ(fake_->rows_appended(), 7) << "5 changes, the second append's 2 twice";
  using Row = std::pair<std::string, std::int64_t>;
  EXPECT_EQ(table(), (std::map<std::int64_t, Row>{{1, {"a2", 3}}, {3, {"c", 5}}}));
}

TEST_F(BigQueryCdcSinkIT, AMissingTableIsCreatedWithTheDeclaredPrimaryKey) {
  auto b = builder(false);
  CdcTableOptions table_options;
  table_options.primary_key_columns = {"id"};
  b.cdc_table_options(table_options);
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  ASSERT_TRUE(write(*sink, {{7, "x", 1}, {7, "y", 2}}).ok());
  auto created = fake_->table("p", "d", "staff");
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["tableConstraints"]["primaryKey"]["columns"], nlohmann::json::array({"id"}));
  using Row = std::pair<std::string, std::int64_t>;
  EXPECT_EQ(table(), (std::map<std::int64_t, Row>{{7, {"y", 2}}}));
}

TEST_F(BigQueryCdcSinkIT, ATableDroppedMidJobIsRecreatedWithTheDeclaredKeyOnly) {
  for (const bool declared : {true, false}) {
    SCOPED_TRACE(declared ? "a declared key" : "the table's own key");
    (void)fake_->delete_table("p", "d", "staff");  // what the previous round left
    add_table({"id"});
    auto b = builder(false);
    if (declared) {
      CdcTableOptions table_options;
      table_options.primary_key_columns = {"id"};
      b.cdc_table_options(table_options);
    }
    auto sink = b.build();
    ASSERT_TRUE(sink.ok()) << sink.status();
    testing::TestMailbox mailbox;
    testing::FakeWriterInitContext context(mailbox);
    auto w = (*sink)->create_writer(context);
    ASSERT_TRUE(w.ok()) << w.status();
    SinkWriterContext ctx;
    ASSERT_TRUE((*w)->write(Change{1, "before", 1}, ctx).ok());
    ASSERT_TRUE((*w)->flush(false).ok());
    // The table disappears while the writer runs; its next append finds it missing.
    ASSERT_TRUE(fake_->delete_table("p", "d", "staff").ok());
    absl::Status s = (*w)->write(Change{2, "after", 2}, ctx);
    if (s.ok()) s = (*w)->flush(false);
    (void)(*w)->close();
    if (declared) {
      ASSERT_TRUE(s.ok()) << s;
      auto table = fake_->table("p", "d", "staff");
      ASSERT_TRUE(table.ok()) << table.status();
      EXPECT_EQ((*table)["tableConstraints"]["primaryKey"]["columns"],
                nlohmann::json::array({"id"}));
      using Row = std::pair<std::string, std::int64_t>;
      EXPECT_EQ(this->table(), (std::map<std::int64_t, Row>{{2, {"after", 2}}}));
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
      EXPECT_THAT(std::string(s.message()), HasSubstr("declares no primary key"));
      EXPECT_FALSE(fake_->table("p", "d", "staff").ok()) << "never re-created without a key";
    }
  }
}

TEST_F(BigQueryCdcSinkIT, ATableWithoutAPrimaryKeyFailsTheJobBeforeAnyRowNamingTheFix) {
  add_table({});
  int routed = 0;
  auto b = builder(false);
  b.failure_handler(connector::FailureHandler::custom([&](const connector::FailedElement&) {
    ++routed;
    return absl::OkStatus();
  }));
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  const absl::Status s = write(*sink, {{1, "a", 1}});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("projects/p/datasets/d/tables/staff"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("no primary key"));
  EXPECT_EQ(routed, 0) << "a contract failure is the job's, never a record's";
  EXPECT_TRUE(table().empty());
}

TEST_F(BigQueryCdcSinkIT, AnotherPrimaryKeyThanTheDeclaredOneFailsNamingBoth) {
  add_table({"name"});
  auto b = builder(false);
  CdcTableOptions table_options;
  table_options.primary_key_columns = {"id"};
  b.cdc_table_options(table_options);
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  const absl::Status s = write(*sink, {{1, "a", 1}});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("(name)"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("(id)"));
}

TEST_F(BigQueryCdcSinkIT, AMissingTableWithoutADeclaredKeyOrUnderCreateNeverFailsClearly) {
  {
    auto sink = builder(false).build();
    ASSERT_TRUE(sink.ok()) << sink.status();
    const absl::Status s = write(*sink, {{1, "a", 1}});
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("declares no primary key"));
  }
  {
    auto b = builder(false);
    CdcTableOptions table_options;
    table_options.primary_key_columns = {"id"};
    b.cdc_table_options(table_options).create_disposition(CreateDisposition::kCreateNever);
    auto sink = b.build();
    ASSERT_TRUE(sink.ok()) << sink.status();
    const absl::Status s = write(*sink, {{1, "a", 1}});
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("CREATE_NEVER"));
  }
  EXPECT_FALSE(fake_->table("p", "d", "staff").ok()) << "nothing may create the table";
}

TEST_F(BigQueryCdcSinkIT, ABadSequenceOrAFailingProviderIsAFailureOfThatRecordAlone) {
  add_table({"id"});
  std::vector<std::string> routed;
  auto serializer = BigQuerySerializationSchema<Change>::json(Schema(), [](const Change& c) {
    if (c.id < 0) return absl::StatusOr<std::optional<nlohmann::json>>(std::nullopt);  // skip
    return absl::StatusOr<std::optional<nlohmann::json>>(
        nlohmann::json{{"id", c.id}, {"name", c.name}, {"salary", c.salary}});
  });
  ASSERT_TRUE(serializer.ok());
  int provider_calls = 0;
  CdcOptions<Change> cdc;
  cdc.change_type = [&](const Change& c) -> absl::StatusOr<ChangeType> {
    ++provider_calls;
    if (c.name == "no-type") return absl::InvalidArgumentError("no operation in the event");
    if (c.name == "throws") throw std::runtime_error("bad event");
    return c.type;
  };
  cdc.sequence_number = [](const Change& c) { return absl::StatusOr<std::string>(c.sequence); };
  auto b = BigQuerySink<Change>::builder();
  b.destination(kTable)
      .serializer(*serializer)
      .cdc_options(cdc)
      .emulator_endpoint(fake_->grpc_endpoint())
      .emulator_rest_endpoint(fake_->rest_endpoint())
      .failure_handler(connector::FailureHandler::custom([&](const connector::FailedElement& e) {
        EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
        routed.emplace_back(e.status().message());
        return absl::OkStatus();
      }));
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  ASSERT_TRUE(write(*sink, {{1, "ok", 1, ChangeType::kUpsert, "1"},
                            {2, "bad", 2, ChangeType::kUpsert, "1/2/3/4/5"},
                            {3, "bad", 3, ChangeType::kUpsert, "xyz"},
                            {4, "bad", 4, ChangeType::kUpsert, ""},
                            {5, "no-type", 5, ChangeType::kUpsert, "1"},
                            {-1, "skipped", 0, ChangeType::kUpsert, "not even looked at"},
                            {7, "throws", 7, ChangeType::kUpsert, "1"},
                            {6, "ok", 6, ChangeType::kUpsert, "11111111111111111"}})
                  .ok());
  ASSERT_EQ(routed.size(), 6u);
  EXPECT_THAT(routed[0], HasSubstr("5 sections"));
  EXPECT_THAT(routed[1], HasSubstr("not a hexadecimal digit"));
  EXPECT_THAT(routed[2], HasSubstr("empty"));
  EXPECT_THAT(routed[3], HasSubstr("change_type provider failed"));
  EXPECT_THAT(routed[4], HasSubstr("change_type provider failed: threw: bad event"));
  EXPECT_THAT(routed[5], HasSubstr("17 digits"));
  EXPECT_EQ(provider_calls, 7) << "a skipped record reaches no CDC provider";
  using Row = std::pair<std::string, std::int64_t>;
  EXPECT_EQ(table(), (std::map<std::int64_t, Row>{{1, {"ok", 1}}}));
}

TEST_F(BigQueryCdcSinkIT, TheBuilderRefusesCdcOutsideTheDefaultStreamAndPseudocolumnNames) {
  auto exactly_once = builder(false);
  exactly_once.write_method(WriteMethod::kStorageApiExactlyOnce);
  auto refused = exactly_once.build();
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("STORAGE_API_AT_LEAST_ONCE"));

  auto clash = BigQuerySerializationSchema<Change>::json(
      *TableSchemaFromJson(nlohmann::json::parse(
          R"([{"name": "id", "type": "INT64"}, {"name": "_change_type", "type": "STRING"}])")),
      [](const Change&) { return absl::StatusOr<std::optional<nlohmann::json>>(std::nullopt); });
  ASSERT_TRUE(clash.ok()) << clash.status();
  CdcOptions<Change> cdc;
  cdc.change_type = [](const Change& c) { return absl::StatusOr<ChangeType>(c.type); };
  auto b = BigQuerySink<Change>::builder();
  b.destination(kTable).serializer(*clash).cdc_options(cdc);
  auto built = b.build();
  EXPECT_EQ(built.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(built.status().message()), HasSubstr("_change_type"));

  auto no_type = builder(false);
  no_type.cdc_options(CdcOptions<Change>{});
  EXPECT_THAT(std::string(no_type.build().status().message()), HasSubstr("change_type"));

  auto table_only = BigQuerySink<Change>::builder();
  CdcTableOptions keyed;
  keyed.primary_key_columns = {"id"};
  auto serializer = BigQuerySerializationSchema<Change>::json(Schema(), [](const Change&) {
    return absl::StatusOr<std::optional<nlohmann::json>>(std::nullopt);
  });
  ASSERT_TRUE(serializer.ok());
  table_only.destination(kTable).serializer(*serializer).cdc_table_options(keyed);
  EXPECT_THAT(std::string(table_only.build().status().message()),
              HasSubstr("cdc_table_options needs cdc_options"));

  auto bad_key = builder(false);
  CdcTableOptions key;
  key.primary_key_columns = {"id", "nope"};
  bad_key.cdc_table_options(key);
  EXPECT_THAT(std::string(bad_key.build().status().message()), HasSubstr("'nope'"));
}

}  // namespace
}  // namespace gcpstream::bigquery
