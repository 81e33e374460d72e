// The at-least-once BigQuery sink (the default stream) against the BigQuery fake: a job writes
// every record, creating the missing table with its partitioning and clustering; a transient
// failure is retried without loss; rows the service refuses are routed and their request's
// other rows resent; a missing table under CREATE_NEVER and a schema the table cannot take fail
// naming why.
#include "gcpstream/bigquery/sink/bigquery_sink.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "tests/fakes/bigquery/bigquery_fake.h"
#include "tests/support/fake_contexts.h"

namespace gcpstream::bigquery {
namespace {

using namespace std::chrono_literals;
using connector::BigQueryTableDestination;
using ::testing::HasSubstr;

const BigQueryTableDestination kTable = BigQueryTableDestination::of("p", "d", "numbers");

TableSchema Schema() {
  return *TableSchemaFromJson(nlohmann::json::parse(R"([
    {"name": "n", "type": "INT64", "mode": "REQUIRED"},
    {"name": "code", "type": "STRING"},
    {"name": "day", "type": "DATE"}])"));
}

class BigQuerySinkIT : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fake = testing::BigQueryFake::Start();
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = std::move(*fake);
    ASSERT_TRUE(fake_->add_dataset("p", "d").ok());
  }
  template <typename T>
  typename BigQuerySink<T>::Builder builder(
      std::function<absl::StatusOr<std::optional<nlohmann::json>>(const T&)> to_json) {
    auto serializer = BigQuerySerializationSchema<T>::json(Schema(), std::move(to_json));
    EXPECT_TRUE(serializer.ok()) << serializer.status();
    auto b = BigQuerySink<T>::builder();
    b.destination(kTable)
        .serializer(*serializer)
        .emulator_endpoint(fake_->grpc_endpoint())
        .emulator_rest_endpoint(fake_->rest_endpoint());
    return b;
  }
  static absl::StatusOr<std::optional<nlohmann::json>> Number(const std::int64_t& n) {
    return std::optional<nlohmann::json>(
        nlohmann::json{{"n", n}, {"code", "c" + std::to_string(n % 7)}, {"day", "2024-01-01"}});
  }
  std::multiset<std::int64_t> numbers() {
    std::multiset<std::int64_t> out;
    auto rows = fake_->rows(kTable.resource_name());
    if (!rows.ok()) return out;
    for (const auto& r : *rows) out.insert(std::stoll(r["n"].get<std::string>()));
    return out;
  }

  // The table "numbers" with the serializer's schema, made before the job.
  void add_numbers_table() {
    ASSERT_TRUE(fake_
                    ->add_table("p", "d",
                                {{"tableReference", {{"tableId", "numbers"}}},
                                 {"schema", {{"fields", TableSchemaToJson(Schema())}}}})
                    .ok());
  }
  // A job writing 0..count-1 through `sink` with 50 ms checkpoints.
  static runtime::JobResult run(const std::shared_ptr<BigQuerySink<std::int64_t>>& sink,
                                std::int64_t count, const std::string& name, int parallelism = 1) {
    StreamExecutionEnvironment env;
    env.set_parallelism(parallelism);
    env.enable_checkpointing(50ms);
    env.from_source(std::make_shared<NumberSequenceSource>(0, count - 1, 1),
                    WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
        .sink_to(sink, "bigquery");
    return env.execute(name);
  }

  std::unique_ptr<testing::BigQueryFake> fake_;
};

TEST_F(BigQuerySinkIT, AJobWritesEveryRecordIntoTheTableItCreates) {
  TableCreateOptions create;
  create.time_partitioning = {{"type", "DAY"}, {"field", "day"}};
  create.clustering_fields = {"code"};
  auto b = builder<std::int64_t>(Number);
  BigQueryWriterOptions options;
  options.max_append_request_bytes = 2000;  // many requests
  b.table_create_options(create).writer_options(options);
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  auto result = run(*sink, 5000, "bigquery-5000", /*parallelism=*/2);
  ASSERT_TRUE(result.status.ok()) << result.status;
  const auto got = numbers();
  EXPECT_EQ(got.size(), 5000u);
  EXPECT_EQ(std::set<std::int64_t>(got.begin(), got.end()).size(), 5000u);
  auto table = fake_->table("p", "d", "numbers");
  ASSERT_TRUE(table.ok());
  EXPECT_EQ((*table)["timePartitioning"]["field"], "day");
  EXPECT_EQ((*table)["clustering"]["fields"][0], "code");
  EXPECT_EQ((*table)["schema"]["fields"][0]["mode"], "REQUIRED");
  EXPECT_GE(result.metric("bigquery", "tablesCreated"), 1);
  EXPECT_EQ(result.metric("bigquery", "numRecordsSend"), 5000);
  EXPECT_EQ(result.metric("bigquery", "numRecordsSendErrors"), 0);
}

TEST_F(BigQuerySinkIT, TransientFailuresAreRetriedAndNothingIsLost) {
  add_numbers_table();
  testing::FakeOptions faults;
  faults.unavailable_on_append = 3;
  faults.lose_response_on_append = 5;
  fake_->set_options(faults);
  auto b = builder<std::int64_t>(Number);
  BigQueryWriterOptions options;
  options.max_append_request_bytes = 1000;
  options.retry_initial_delay = 10ms;
  b.writer_options(options);
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  auto result = run(*sink, 1000, "bigquery-faults");
  ASSERT_TRUE(result.status.ok()) << result.status;
  const auto got = numbers();
  EXPECT_EQ(std::set<std::int64_t>(got.begin(), got.end()).size(), 1000u) << "a row was lost";
  EXPECT_GE(got.size(), 1000u);
  EXPECT_GE(result.metric("bigquery", "appendRetries"), 2);
}

TEST_F(BigQuerySinkIT, ARunOfQuotaRefusalsIsOutlastedAndNothingIsLost) {
  add_numbers_table();
  testing::FakeOptions quota;
  quota.resource_exhausted_from = 2;
  quota.resource_exhausted_count = 6;  // six refusals in a row
  fake_->set_options(quota);
  auto b = builder<std::int64_t>(Number);
  BigQueryWriterOptions options;
  options.max_append_request_bytes = 1000;
  options.retry_initial_delay = 10ms;
  options.retry_max_attempts = 1;  // no in-stream retry: the writer's re-append must outlast it
  options.recovery.initial_backoff = 10ms;
  b.writer_options(options);
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  auto result = run(*sink, 1000, "bigquery-quota");
  ASSERT_TRUE(result.status.ok()) << result.status;
  const auto got = numbers();
  EXPECT_EQ(std::set<std::int64_t>(got.begin(), got.end()).size(), 1000u) << "a row was lost";
  EXPECT_EQ(got.size(), 1000u) << "a refused append was applied after all";
  // Nothing was retried in-stream; the writer's re-append outlasted the rest, counted
  // under the code the service answered.
  EXPECT_GE(result.metric("bigquery", "errorClass.RESOURCE_EXHAUSTED.errors"), 1);
  EXPECT_EQ(result.metric("bigquery", "errorClass.NOT_FOUND.errors"), 0);
  EXPECT_EQ(result.metric("bigquery", "numRecordsSendErrors"), 0);
}

TEST_F(BigQuerySinkIT, AQuotaThatNeverLiftsFailsTheJobWithItsCodeAfterTheRecoveryBudget) {
  add_numbers_table();
  testing::FakeOptions quota;
  quota.resource_exhausted_from = 1;
  quota.resource_exhausted_count = 1'000'000;
  fake_->set_options(quota);
  std::atomic<int> routed{0};
  auto b = builder<std::int64_t>(Number);
  BigQueryWriterOptions options;
  options.retry_initial_delay = 10ms;
  options.retry_max_attempts = 2;
  options.recovery.initial_backoff = 10ms;
  options.recovery.max_attempts = 3;
  b.writer_options(options).failure_handler(
      connector::FailureHandler::custom([&](const connector::FailedElement&) {
        ++routed;  // an outage is never a bad row
        return absl::OkStatus();
      }));
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  auto result = run(*sink, 100, "bigquery-quota-forever");
  EXPECT_EQ(result.status.code(), absl::StatusCode::kResourceExhausted) << result.status;
  EXPECT_THAT(std::string(result.status.message()), HasSubstr("recovery budget"));
  EXPECT_THAT(std::string(result.status.message()), HasSubstr("quota"));
  EXPECT_EQ(routed.load(), 0);
  EXPECT_TRUE(numbers().empty());
}

TEST_F(BigQuerySinkIT, AnAppendThatIsNeverAnsweredIsCancelledAndResent) {
  testing::FakeOptions stall;
  stall.stall_on_append = 1;
  stall.stall = std::chrono::minutes(10);  // far past the test's patience
  fake_->set_options(stall);
  add_numbers_table();
  testing::TestMailbox mailbox;
  testing::FakeWriterInitContext context(mailbox);
  auto b = builder<std::int64_t>(Number);
  BigQueryWriterOptions options;
  options.append_answer_timeout = 300ms;
  options.retry_initial_delay = 10ms;
  b.writer_options(options);
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  auto w = (*sink)->create_writer(context);
  ASSERT_TRUE(w.ok()) << w.status();
  SinkWriterContext ctx;
  for (std::int64_t n = 0; n < 3; ++n) ASSERT_TRUE((*w)->write(n, ctx).ok());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE((*w)->flush(false).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s) << "the stalled append was not cut";
  EXPECT_EQ(numbers(), (std::multiset<std::int64_t>{0, 1, 2}));
  EXPECT_GE(context.metric("appendRetries"), 1);
  ASSERT_TRUE((*w)->close().ok());
}

TEST_F(BigQuerySinkIT, RowsTheServiceRefusesAreRoutedAndTheirNeighboursWritten) {
  // The table is stricter than the sink's schema: codes over 2 characters are refused there.
  auto fields = TableSchemaToJson(Schema());
  fields[1]["maxLength"] = "2";
  ASSERT_TRUE(fake_
                  ->add_table("p", "d",
                              {{"tableReference", {{"tableId", "numbers"}}},
                               {"schema", {{"fields", fields}}}})
                  .ok());
  testing::TestMailbox mailbox;
  testing::FakeWriterInitContext context(mailbox);
  std::vector<std::string> routed;
  auto b = builder<std::string>([](const std::string& code) {
    return absl::StatusOr<std::optional<nlohmann::json>>(
        nlohmann::json{{"n", static_cast<std::int64_t>(code.size())}, {"code", code}});
  });
  b.failure_handler(connector::FailureHandler::custom([&](const connector::FailedElement& e) {
    EXPECT_EQ(e.connector(), "bigquery");
    EXPECT_EQ(e.describe_destination(), "p.d.numbers");
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    routed.push_back(e.payload_bytes());
    return absl::OkStatus();
  }));
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  auto w = (*sink)->create_writer(context);
  ASSERT_TRUE(w.ok()) << w.status();
  SinkWriterContext ctx;
  for (const char* code : {"a", "toolong", "bb", "c"}) {
    ASSERT_TRUE((*w)->write(std::string(code), ctx).ok());
  }
  ASSERT_TRUE((*w)->flush(false).ok());
  EXPECT_EQ(routed.size(), 1u);
  EXPECT_EQ(numbers(), (std::multiset<std::int64_t>{1, 2, 1}));
  EXPECT_EQ(context.metric("numRecordsSendErrors"), 1);
  ASSERT_TRUE((*w)->close().ok());
}

TEST_F(BigQuerySinkIT, ARowTooLargeForAnyRequestIsAFailureOfThatRowAlone) {
  testing::TestMailbox mailbox;
  testing::FakeWriterInitContext context(mailbox);
  int routed = 0;
  auto b = builder<std::string>([](const std::string& code) {
    return absl::StatusOr<std::optional<nlohmann::json>>(
        nlohmann::json{{"n", static_cast<std::int64_t>(code.size())}, {"code", code}});
  });
  b.failure_handler(connector::FailureHandler::custom([&](const connector::FailedElement& e) {
    EXPECT_THAT(std::string(e.status().message()), HasSubstr("10 MB"));
    ++routed;
    return absl::OkStatus();
  }));
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  auto w = (*sink)->create_writer(context);
  ASSERT_TRUE(w.ok()) << w.status();
  SinkWriterContext ctx;
  ASSERT_TRUE((*w)->write(std::string("a"), ctx).ok());
  ASSERT_TRUE((*w)->write(std::string(11'000'000, 'x'), ctx).ok());
  ASSERT_TRUE((*w)->write(std::string("bb"), ctx).ok());
  ASSERT_TRUE((*w)->flush(false).ok());
  EXPECT_EQ(routed, 1);
  EXPECT_EQ(numbers(), (std::multiset<std::int64_t>{1, 2}));
  ASSERT_TRUE((*w)->close().ok());
}

TEST_F(BigQuerySinkIT, AMissingTableUnderCreateNeverFailsNamingIt) {
  testing::TestMailbox mailbox;
  testing::FakeWriterInitContext context(mailbox);
  std::atomic<int> routed{0};
  auto b = builder<std::int64_t>(Number);
  b.create_disposition(CreateDisposition::kCreateNever)
      .failure_handler(connector::FailureHandler::custom([&](const connector::FailedElement&) {
        ++routed;
        return absl::OkStatus();
      }));
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  auto w = (*sink)->create_writer(context);
  ASSERT_TRUE(w.ok());
  SinkWriterContext ctx;
  ASSERT_TRUE((*w)->write(std::int64_t{1}, ctx).ok());
  const absl::Status s = (*w)->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("CREATE_NEVER"));
  EXPECT_THAT(std::string(s.message()), HasSubstr(kTable.resource_name()));
  EXPECT_EQ(routed.load(), 0) << "an outage or a missing table never reaches the handler";
  ASSERT_TRUE((*w)->close().ok());
}

TEST_F(BigQuerySinkIT, ATableWithoutTheSerializersColumnsFailsTheJobAndRoutesNothing) {
  ASSERT_TRUE(fake_
                  ->add_table("p", "d",
                              {{"tableReference", {{"tableId", "numbers"}}},
                               {"schema", {{"fields", {{{"name", "n"}, {"type", "INT64"}}}}}}})
                  .ok());
  testing::TestMailbox mailbox;
  testing::FakeWriterInitContext context(mailbox);
  std::atomic<int> routed{0};
  auto b = builder<std::int64_t>(Number);
  b.failure_handler(connector::FailureHandler::custom([&](const connector::FailedElement&) {
    ++routed;
    return absl::OkStatus();
  }));
  auto sink = b.build();
  ASSERT_TRUE(sink.ok());
  auto w = (*sink)->create_writer(context);
  ASSERT_TRUE(w.ok());
  SinkWriterContext ctx;
  ASSERT_TRUE((*w)->write(std::int64_t{1}, ctx).ok());
  const absl::Status s = (*w)->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("does not have"));
  EXPECT_EQ(routed.load(), 0);
  ASSERT_TRUE((*w)->close().ok());
}

TEST_F(BigQuerySinkIT, FlushIntervalAppendsWhatIsBatchedWithoutACheckpoint) {
  for (const bool periodic : {false, true}) {
    fake_ = nullptr;
    SetUp();
    ASSERT_TRUE(fake_
                    ->add_table("p", "d",
                                {{"tableReference", {{"tableId", "numbers"}}},
                                 {"schema", {{"fields", TableSchemaToJson(Schema())}}}})
                    .ok());
    testing::TestMailbox mailbox;
    testing::FakeWriterInitContext context(mailbox);
    BigQueryWriterOptions options;
    if (periodic) options.flush_interval = 50ms;
    auto b = builder<std::int64_t>(Number);
    b.writer_options(options);
    auto sink = b.build();
    ASSERT_TRUE(sink.ok()) << sink.status();
    auto w = (*sink)->create_writer(context);
    ASSERT_TRUE(w.ok()) << w.status();
    SinkWriterContext ctx;
    for (std::int64_t n = 0; n < 5; ++n) ASSERT_TRUE((*w)->write(n, ctx).ok());
    // Five small rows never fill a 512 KiB request: only the interval sends them.
    const auto deadline = std::chrono::steady_clock::now() + (periodic ? 10s : 500ms);
    while (numbers().size() < 5 && std::chrono::steady_clock::now() < deadline) {
      ASSERT_TRUE(mailbox.drain().ok());
      std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(numbers().size(), periodic ? 5u : 0u)
        << (periodic ? "flush_interval 50ms" : "no flush_interval") << ", no flush() called";
    ASSERT_TRUE((*w)->flush(false).ok());
    EXPECT_EQ(numbers().size(), 5u);
    ASSERT_TRUE((*w)->close().ok());
  }
}

// Both write methods: an existing table lacking the rows' columns is widened when the sink may
// (schema_update_options), then every row is written once.
class SchemaUpdateIT : public BigQuerySinkIT, public ::testing::WithParamInterface<WriteMethod> {};

TEST_P(SchemaUpdateIT, ATableMissingTheRowsColumnsIsWidenedAndEveryRowWritten) {
  ASSERT_TRUE(fake_
                  ->add_table("p", "d",
                              {{"tableReference", {{"tableId", "numbers"}}},
                               {"schema",
                                {{"fields",
                                  {{{"name", "n"}, {"type", "INT64"}, {"mode", "REQUIRED"}},
                                   {{"name", "old"}, {"type", "STRING"}, {"mode", "REQUIRED"}}}}}}})
                  .ok());
  BigQueryWriterOptions options;
  options.max_append_request_bytes = 300;
  options.recovery.initial_backoff = std::chrono::milliseconds(10);
  auto b = builder<std::int64_t>(Number);
  b.write_method(GetParam())
      .writer_options(options)
      .schema_update_options({.allow_new_fields = true, .allow_field_relaxation = true});
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  auto result = run(*sink, 300, "bigquery-schema-update");
  ASSERT_TRUE(result.status.ok()) << result.status;
  const auto got = numbers();
  EXPECT_EQ(got.size(), 300u);
  EXPECT_EQ(std::set<std::int64_t>(got.begin(), got.end()).size(), 300u);
  EXPECT_GE(result.metric("bigquery", "schemaUpdates"), 1);
  auto table = fake_->table("p", "d", "numbers");
  ASSERT_TRUE(table.ok());
  const auto& fields = (*table)["schema"]["fields"];
  ASSERT_EQ(fields.size(), 4u) << fields.dump();
  EXPECT_EQ(fields[1]["name"], "old");
  EXPECT_EQ(fields[1]["mode"], "NULLABLE") << "relaxed: the rows do not carry it";
  EXPECT_EQ(fields[2]["name"], "code");
  EXPECT_EQ(fields[3]["name"], "day");
}

INSTANTIATE_TEST_SUITE_P(WriteMethods, SchemaUpdateIT,
                         ::testing::Values(WriteMethod::kStorageApiAtLeastOnce,
                                           WriteMethod::kStorageApiExactlyOnce),
                         [](const ::testing::TestParamInfo<WriteMethod>& info) {
                           return info.param == WriteMethod::kStorageApiExactlyOnce
                                      ? std::string("ExactlyOnce")
                                      : std::string("AtLeastOnce");
                         });

TEST(BigQuerySinkBuilderTest, RefusesWhatItCannotDoYet) {
  auto serializer = BigQuerySerializationSchema<int>::json(
      Schema(), [](const int&) { return absl::StatusOr<std::optional<nlohmann::json>>(); });
  ASSERT_TRUE(serializer.ok());
  auto file_loads = BigQuerySink<int>::builder()
                        .destination(kTable)
                        .serializer(*serializer)
                        .write_method(WriteMethod::kFileLoads)
                        .build();
  EXPECT_EQ(file_loads.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(file_loads.status().message().find("build_file_loads()"), std::string::npos)
      << "FILE_LOADS is a sink type of its own: the error says how to build it";
  auto half_emulator = BigQuerySink<int>::builder()
                           .destination(kTable)
                           .serializer(*serializer)
                           .emulator_endpoint("localhost:9060")
                           .build();
  EXPECT_EQ(half_emulator.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BigQuerySink<int>::builder().destination(kTable).build().status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gcpstream::bigquery
