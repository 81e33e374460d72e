// The BigQuery sink fed protobuf messages, against the BigQuery fake, through both write methods:
// the table the sink creates has the schema derived from the message descriptor (marked JSON and
// GEOGRAPHY columns, TIMESTAMP, RECORD, a map as REPEATED RECORD), every message lands as a row
// of BigQuery values, and a message the converter refuses (a uint64 above INT64's range) goes to
// the failure handler while the rest are written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>

#include "gcpstream/bigquery/sink/bigquery_sink.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "tests/fakes/bigquery/bigquery_fake.h"
#include "tests/protos/bigquery_rows.pb.h"

namespace gcpstream::bigquery {
namespace {

using namespace std::chrono_literals;
using connector::BigQueryTableDestination;
namespace bq = ::gcpstream::test::bq;

const BigQueryTableDestination kTable = BigQueryTableDestination::of("p", "d", "events");
constexpr std::int64_t kEvents = 600;

// Event n; every 100th carries a uint64 BigQuery's INT64 cannot hold.
std::unique_ptr<google::protobuf::Message> EventOf(std::int64_t n) {
  auto e = std::make_unique<bq::Event>();
  e->set_id(n);
  e->mutable_at()->set_seconds(1'700'000'000 + n);
  e->mutable_at()->set_nanos(1'500);
  if (n % 2 == 0) e->set_payload(R"({"n":)" + std::to_string(n) + "}");
  e->set_site("POINT(" + std::to_string(n % 90) + " 1)");
  e->mutable_inner()->set_name("i" + std::to_string(n));
  (*e->mutable_counts())["k"] = n;
  if (n % 3 == 0) e->mutable_maybe()->set_value(-n);
  e->set_color(n % 2 == 0 ? bq::RED : bq::GREEN);
  e->set_big(n % 100 == 99 ? std::numeric_limits<std::uint64_t>::max()
                           : static_cast<std::uint64_t>(n));
  return e;
}

class ProtoSinkIT : public ::testing::TestWithParam<WriteMethod> {
 protected:
  void SetUp() override {
    auto fake = testing::BigQueryFake::Start();
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = std::move(*fake);
    ASSERT_TRUE(fake_->add_dataset("p", "d").ok());
  }
  std::unique_ptr<testing::BigQueryFake> fake_;
};

TEST_P(ProtoSinkIT, MessagesLandAsRowsOfTheSchemaDerivedFromTheirDescriptor) {
  ProtoSchemaOptions options;
  options.json_field_option_number(50000).geography_field_option_number(50006);
  auto serializer = BigQuerySerializationSchema<std::int64_t>::proto(
      bq::Event::descriptor(), options,
      [](const std::int64_t& n) -> absl::StatusOr<std::unique_ptr<google::protobuf::Message>> {
        return EventOf(n);
      });
  ASSERT_TRUE(serializer.ok()) << serializer.status();
  std::atomic<int> routed{0};
  BigQueryWriterOptions writer;
  writer.max_append_request_bytes = 4000;  // many appends
  writer.recovery.initial_backoff = 10ms;
  auto sink = BigQuerySink<std::int64_t>::builder()
                  .destination(kTable)
                  .write_method(GetParam())
                  .serializer(*serializer)
                  .writer_options(writer)
                  .failure_handler(
                      connector::FailureHandler::custom([&](const connector::FailedElement& e) {
                        EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
                        EXPECT_THAT(std::string(e.status().message()), ::testing::HasSubstr("big"));
                        ++routed;
                        return absl::OkStatus();
                      }))
                  .emulator_endpoint(fake_->grpc_endpoint())
                  .emulator_rest_endpoint(fake_->rest_endpoint())
                  .build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  env.enable_checkpointing(50ms);
  env.from_source(std::make_shared<NumberSequenceSource>(0, kEvents - 1, 1),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .sink_to(*sink, "bigquery");
  auto result = env.execute("bigquery-proto");
  ASSERT_TRUE(result.status.ok()) << result.status;

  auto table = fake_->table("p", "d", "events");
  ASSERT_TRUE(table.ok()) << table.status();
  std::map<std::string, std::string> types;
  for (const auto& f : (*table)["schema"]["fields"]) {
    types[f["name"].get<std::string>()] =
        f["type"].get<std::string>() + " " + f["mode"].get<std::string>();
  }
  EXPECT_EQ(types, (std::map<std::string, std::string>{{"id", "INTEGER NULLABLE"},
                                                       {"at", "TIMESTAMP NULLABLE"},
                                                       {"payload", "JSON NULLABLE"},
                                                       {"site", "GEOGRAPHY NULLABLE"},
                                                       {"inner", "RECORD NULLABLE"},
                                                       {"counts", "RECORD REPEATED"},
                                                       {"maybe", "INTEGER NULLABLE"},
                                                       {"color", "STRING NULLABLE"},
                                                       {"big", "INTEGER NULLABLE"}}));

  auto rows = fake_->rows(kTable.resource_name());
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::map<std::int64_t, nlohmann::json> by_id;
  for (const auto& r : *rows) {
    const std::int64_t id = std::stoll(r["id"].get<std::string>());
    EXPECT_FALSE(by_id.contains(id)) << "row " << id << " twice";
    by_id[id] = r;
  }
  EXPECT_EQ(by_id.size(), static_cast<std::size_t>(kEvents - kEvents / 100))
      << "every event but the unrepresentable ones";
  EXPECT_EQ(routed.load(), kEvents / 100);
  EXPECT_FALSE(by_id.contains(99));
  ASSERT_TRUE(by_id.contains(42));
  const nlohmann::json& r = by_id[42];
  EXPECT_EQ(r["at"], "1700000042000001");  // 1,500 ns truncated to 1 µs
  EXPECT_EQ(nlohmann::json::parse(r["payload"].get<std::string>()), nlohmann::json({{"n", 42}}));
  EXPECT_EQ(r["site"], "POINT(42 1)");
  EXPECT_EQ(r["inner"]["name"], "i42");
  EXPECT_EQ(r["counts"][0]["key"], "k");
  EXPECT_EQ(r["counts"][0]["value"], "42");
  EXPECT_EQ(r["maybe"], "-42");
  EXPECT_EQ(r["color"], "RED");
  EXPECT_EQ(r["big"], "42");
  ASSERT_TRUE(by_id.contains(43));
  EXPECT_TRUE(by_id[43]["payload"].is_null()) << "an unset marked string is NULL, not \"\"";
  EXPECT_TRUE(by_id[43]["maybe"].is_null()) << "an unset wrapper is NULL";
}

INSTANTIATE_TEST_SUITE_P(WriteMethods, ProtoSinkIT,
                         ::testing::Values(WriteMethod::kStorageApiAtLeastOnce,
                                           WriteMethod::kStorageApiExactlyOnce),
                         [](const auto& info) {
                           return info.param == WriteMethod::kStorageApiAtLeastOnce
                                      ? std::string("AtLeastOnce")
                                      : std::string("ExactlyOnce");
                         });

}  // namespace
}  // namespace gcpstream::bigquery
