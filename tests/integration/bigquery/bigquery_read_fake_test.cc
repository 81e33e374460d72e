// The BigQuery fake's Storage Read API, one documented behaviour per test, through a real gRPC
// channel. Each test names what it follows: the Storage Read API reference
// (google/cloud/bigquery/storage/v1/storage.proto and stream.proto, the same text as
// cloud.google.com/bigquery/docs/reference/storage/rpc: CreateReadSessionRequest's stream
// counts, ReadSession.expire_time and table_modifiers, ReadRowsRequest.offset, SplitReadStream),
// the "Use the Storage Read API" guide (selected fields, row restrictions, Avro rows) and the
// time-travel page (the 7-day window); and where the service was measured rather than
// documented, ../shared/spec/bigquery.md, "Source".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/bigquery/client/read_stub.h"
#include "gcpstream/bigquery/source/avro_row_decoder.h"
#include "google/protobuf/util/time_util.h"
#include "tests/fakes/bigquery/bigquery_fake.h"

namespace gcpstream::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace storage = google::cloud::bigquery::storage::v1;
using bigquery::BigQueryReadStub;

constexpr char kTable[] = "projects/p/datasets/d/tables/t";

class BigQueryReadFakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fake = BigQueryFake::Start();
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = *std::move(fake);
    ASSERT_TRUE(fake_->add_dataset("p", "d").ok());
    ASSERT_TRUE(fake_->add_table("p", "d", Table("t")).ok());
    connector::ClientOptions client;
    ASSERT_TRUE(client.set_emulator_endpoint(fake_->grpc_endpoint()).ok());
    auto stub = bigquery::MakeBigQueryReadStubFactory(client)();
    ASSERT_TRUE(stub.ok()) << stub.status();
    stub_ = *std::move(stub);
  }

  static nlohmann::json Table(const std::string& id) {
    return {{"tableReference", {{"tableId", id}}},
            {"schema",
             {{"fields",
               {{{"name", "n"}, {"type", "INTEGER"}},
                {{"name", "s"}, {"type", "STRING"}},
                {{"name", "x"}, {"type", "FLOAT"}}}}}}};
  }
  void Insert(int from, int to) {
    std::vector<nlohmann::json> rows;
    for (int i = from; i < to; ++i) {
      rows.push_back({{"n", std::to_string(i)}, {"s", i % 2 ? "odd" : "even"}, {"x", i / 2.0}});
    }
    ASSERT_TRUE(fake_->insert_rows(kTable, std::move(rows)).ok());
  }
  absl::StatusOr<storage::ReadSession> Session(int max = 0, int preferred = 0,
                                               std::vector<std::string> fields = {},
                                               std::string restriction = "",
                                               std::optional<absl::Time> at = std::nullopt,
                                               std::string table = kTable) {
    storage::CreateReadSessionRequest request;
    request.set_parent("projects/p");
    request.mutable_read_session()->set_table(table);
    request.mutable_read_session()->set_data_format(storage::DataFormat::AVRO);
    for (auto& f : fields)
      request.mutable_read_session()->mutable_read_options()->add_selected_fields(f);
    request.mutable_read_session()->mutable_read_options()->set_row_restriction(restriction);
    if (at) {
      *request.mutable_read_session()->mutable_table_modifiers()->mutable_snapshot_time() =
          google::protobuf::util::TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(*at));
    }
    request.set_max_stream_count(max);
    request.set_preferred_min_stream_count(preferred);
    return stub_->create_read_session(request, std::chrono::seconds(10));
  }
  // Every row a stream gives from `offset` (as JSON), the blocks' sizes, and how it ended.
  struct Read {
    std::vector<nlohmann::json> rows;
    std::vector<std::int64_t> blocks;
    absl::Status end;
  };
  Read ReadStream(const storage::ReadSession& session, const std::string& stream,
                  std::int64_t offset = 0) {
    Read out;
    auto decoder = bigquery::AvroRowDecoder::Create(session.avro_schema().schema());
    EXPECT_TRUE(decoder.ok()) << decoder.status();
    storage::ReadRowsRequest request;
    request.set_read_stream(stream);
    request.set_offset(offset);
    auto call = stub_->read_rows(request);
    storage::ReadRowsResponse response;
    while (call->read(&response)) {
      out.blocks.push_back(response.row_count());
      std::vector<bigquery::BigQueryReadRow> rows;
      EXPECT_TRUE(
          (*decoder)
              ->decode(response.avro_rows().serialized_binary_rows(), response.row_count(), rows)
              .ok());
      for (auto& r : rows) out.rows.push_back(r.to_json());
    }
    out.end = call->finish();
    return out;
  }

  std::unique_ptr<BigQueryFake> fake_;
  std::shared_ptr<BigQueryReadStub> stub_;
};

// storage.proto, CreateReadSessionRequest: max_stream_count is an upper bound ("the service may
// choose to return fewer"), preferred_min_stream_count a best-effort request; an empty table has
// no streams. How the service chooses is measured (../shared/spec/bigquery.md, "Assignment and
// stream count"): a small table is one stream however many are asked for.
TEST_F(BigQueryReadFakeTest, StreamCountsFollowTheTableSizeCappedByMaxAndRaisedByPreferred) {
  auto empty = Session();
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->streams_size(), 0);
  Insert(0, 25);
  FakeOptions options;
  options.read_rows_per_stream = 10;
  fake_->set_options(options);
  EXPECT_EQ(Session()->streams_size(), 3);
  EXPECT_EQ(Session(2)->streams_size(), 2);
  EXPECT_EQ(Session(0, 8)->streams_size(), 8);
  EXPECT_EQ(Session(1)->streams_size(), 1);
  EXPECT_EQ(Session(0, 100)->streams_size(), 25) << "never more streams than rows";
  EXPECT_EQ(Session(2, 3).status().code(), absl::StatusCode::kInvalidArgument);
  auto session = Session();
  EXPECT_EQ(session->estimated_row_count(), 25);
  EXPECT_TRUE(session->has_expire_time());
  std::set<std::string> seen;
  for (const auto& s : session->streams()) {
    for (auto& row : ReadStream(*session, s.name()).rows) seen.insert(row["n"].dump());
  }
  EXPECT_EQ(seen.size(), 25u) << "the streams together hold every row once";
}

// storage.proto, ReadRowsRequest.offset: "the offset requested must be less than the last row
// read from ReadRows. Requesting a larger offset is undefined"; measured (spec "Splits, offsets
// and recovery"): an offset at the row count ends with no rows and no error, and a larger one
// fails with FAILED_PRECONDITION naming the offset.
TEST_F(BigQueryReadFakeTest, ReadRowsResumesAtAnOffsetInBlocksAndEndsCleanlyAtTheRowCount) {
  Insert(0, 25);
  FakeOptions options;
  options.read_rows_per_response = 10;
  fake_->set_options(options);
  auto session = Session();
  ASSERT_EQ(session->streams_size(), 1);
  const std::string stream = session->streams(0).name();
  Read all = ReadStream(*session, stream);
  ASSERT_TRUE(all.end.ok()) << all.end;
  EXPECT_THAT(all.blocks, ElementsAre(10, 10, 5));
  Read tail = ReadStream(*session, stream, 20);
  ASSERT_EQ(tail.rows.size(), 5u);
  EXPECT_EQ(tail.rows[0], all.rows[20]);
  Read at_end = ReadStream(*session, stream, 25);
  EXPECT_TRUE(at_end.end.ok());
  EXPECT_TRUE(at_end.rows.empty());
  Read past = ReadStream(*session, stream, 26);
  EXPECT_EQ(past.end.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(past.end.message(), HasSubstr("offset 26"));
  storage::ReadRowsRequest unknown;
  unknown.set_read_stream(stream + "x");
  auto call = stub_->read_rows(unknown);
  storage::ReadRowsResponse ignored;
  while (call->read(&ignored)) {
  }
  EXPECT_EQ(call->finish().code(), absl::StatusCode::kNotFound);
}

// "Use the Storage Read API": selected_fields narrows the columns (the session schema keeps the
// table's order), row_restriction filters rows before they are sent; an unknown column is
// refused when the session is created.
TEST_F(BigQueryReadFakeTest, SelectedFieldsAndASimpleRestrictionShapeTheSession) {
  Insert(0, 20);
  auto session = Session(0, 0, {"x", "N"}, "n >= 10 AND s = 'odd'");
  ASSERT_TRUE(session.ok()) << session.status();
  auto schema = bigquery::ParseAvroReadSchema(session->avro_schema().schema());
  ASSERT_TRUE(schema.ok());
  ASSERT_EQ(schema->columns->fields.size(), 2u);
  EXPECT_EQ(schema->columns->fields[0].name, "n");
  EXPECT_EQ(schema->columns->fields[1].name, "x");
  Read read = ReadStream(*session, session->streams(0).name());
  std::vector<std::int64_t> ns;
  for (auto& r : read.rows) {
    ns.push_back(r["n"].get<std::int64_t>());
    EXPECT_FALSE(r.contains("s"));
  }
  EXPECT_THAT(ns, ElementsAre(11, 13, 15, 17, 19));
  EXPECT_EQ(Session(0, 0, {"nope"}).status().code(), absl::StatusCode::kInvalidArgument);
  auto unknown = Session(0, 0, {}, "nope = 1");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("Unrecognized name: nope"));
  auto unsupported = Session(0, 0, {}, "n = 1 OR n = 2");
  EXPECT_EQ(unsupported.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unsupported.status().message(), HasSubstr("cannot evaluate"));
}

// Time travel ("Access historical data"): a session reads the table as of snapshot_time inside
// the 7-day window; older is refused with the measured INVALID_ARGUMENT "exceeds the maximum
// time travel duration of 168h". A view is refused (measured: "non-table entities cannot be read
// with the storage API"); a missing table is NOT_FOUND.
TEST_F(BigQueryReadFakeTest, SnapshotTimeReadsTheTableAsItWasInsideTheTimeTravelWindow) {
  Insert(0, 5);
  fake_->advance_clock(absl::Hours(1));
  Insert(5, 12);
  const absl::Time now = absl::Now() + absl::Hours(1);
  auto earlier = Session(0, 0, {}, "", now - absl::Minutes(30));
  ASSERT_TRUE(earlier.ok()) << earlier.status();
  EXPECT_EQ(ReadStream(*earlier, earlier->streams(0).name()).rows.size(), 5u);
  auto current = Session();
  EXPECT_EQ(ReadStream(*current, current->streams(0).name()).rows.size(), 12u);
  auto too_old = Session(0, 0, {}, "", now - absl::Hours(24 * 8));
  EXPECT_EQ(too_old.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(too_old.status().message(), HasSubstr("maximum time travel duration of 168h"));
  EXPECT_EQ(
      Session(0, 0, {}, "", std::nullopt, "projects/p/datasets/d/tables/missing").status().code(),
      absl::StatusCode::kNotFound);
  nlohmann::json view = {{"tableReference", {{"tableId", "v"}}},
                         {"view", {{"query", "SELECT 1"}}},
                         {"schema", {{"fields", {{{"name", "a"}, {"type", "INT64"}}}}}}};
  ASSERT_TRUE(fake_->add_table("p", "d", view).ok());
  auto refused = Session(0, 0, {}, "", std::nullopt, "projects/p/datasets/d/tables/v");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("non-table entities"));
}

// ReadSession.expire_time: "Time at which the session becomes invalid. After this time,
// subsequent requests to read this Session will return errors"; six hours (spec, "Read failures
// and retries"). The fake answers FAILED_PRECONDITION naming the expiry.
TEST_F(BigQueryReadFakeTest, ASessionPastItsExpiryRefusesReadsNamingTheExpiry) {
  Insert(0, 3);
  auto session = Session();
  ASSERT_TRUE(session.ok());
  EXPECT_NEAR(google::protobuf::util::TimeUtil::TimestampToSeconds(session->expire_time()),
              absl::ToUnixSeconds(absl::Now() + absl::Hours(6)), 60);
  fake_->advance_clock(absl::Hours(6));
  Read read = ReadStream(*session, session->streams(0).name());
  EXPECT_EQ(read.end.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(read.end.message(), HasSubstr("session expired at"));
}

// SplitReadStream: the primary holds the first rows, the remainder the rest, and together they
// are the original stream's rows; the original then reads as the primary.
TEST_F(BigQueryReadFakeTest, SplitReadStreamDividesAStreamIntoAPrimaryAndARemainder) {
  Insert(0, 10);
  auto session = Session();
  const std::string original = session->streams(0).name();
  grpc::ClientContext context;
  auto channel = grpc::CreateChannel(fake_->grpc_endpoint(), grpc::InsecureChannelCredentials());
  auto raw = storage::BigQueryRead::NewStub(channel);
  storage::SplitReadStreamRequest request;
  request.set_name(original);
  request.set_fraction(0.3);
  storage::SplitReadStreamResponse response;
  ASSERT_TRUE(raw->SplitReadStream(&context, request, &response).ok());
  EXPECT_EQ(ReadStream(*session, response.primary_stream().name()).rows.size(), 3u);
  EXPECT_EQ(ReadStream(*session, response.remainder_stream().name()).rows.size(), 7u);
  EXPECT_EQ(ReadStream(*session, original).rows.size(), 3u);
}

// The injected fault: a ReadRows call ends with UNAVAILABLE after N rows, as a dropped
// connection does; a second call at the reached offset goes on.
TEST_F(BigQueryReadFakeTest, AnInjectedDropEndsACallAfterItsRowsAndTheNextCallGoesOn) {
  Insert(0, 10);
  FakeOptions options;
  options.read_fail_after_rows = 4;
  options.read_fail_count = 1;
  fake_->set_options(options);
  auto session = Session();
  Read first = ReadStream(*session, session->streams(0).name());
  EXPECT_EQ(first.end.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(first.rows.size(), 4u);
  Read rest = ReadStream(*session, session->streams(0).name(), 4);
  EXPECT_TRUE(rest.end.ok()) << rest.end;
  EXPECT_EQ(rest.rows.size(), 6u);
}

}  // namespace
}  // namespace gcpstream::testing
