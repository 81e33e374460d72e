// Rows encoded by the library (JsonRowEncoder, wire_values) and read back by the BigQuery fake,
// whose decoder is written independently from the same documentation ("Supported protocol
// buffer data types"): every column type, a nested RECORD, a REPEATED column and a flexible
// column name round-trip to the values BigQuery would show.
#include <gtest/gtest.h>

#include "gcpstream/bigquery/schema/json_row_encoder.h"
#include "google/cloud/bigquery/storage/v1/storage.grpc.pb.h"
#include "tests/fakes/bigquery/bigquery_fake.h"

namespace gcpstream::bigquery {
namespace {

using namespace std::chrono_literals;
namespace storage = google::cloud::bigquery::storage::v1;

TEST(BigQueryRowEncodingIT, EncodedRowsReadBackAsTheirValues) {
  auto fake = testing::BigQueryFake::Start();
  ASSERT_TRUE(fake.ok()) << fake.status();
  ASSERT_TRUE((*fake)->add_dataset("p", "d").ok());
  const auto fields = nlohmann::json::parse(R"([
    {"name": "id", "type": "INT64", "mode": "REQUIRED"},
    {"name": "name", "type": "STRING"},
    {"name": "score", "type": "FLOAT64"},
    {"name": "ok", "type": "BOOL"},
    {"name": "raw", "type": "BYTES"},
    {"name": "amount", "type": "NUMERIC"},
    {"name": "big", "type": "BIGNUMERIC"},
    {"name": "day", "type": "DATE"},
    {"name": "when", "type": "DATETIME"},
    {"name": "clock", "type": "TIME"},
    {"name": "at", "type": "TIMESTAMP"},
    {"name": "doc", "type": "JSON"},
    {"name": "place", "type": "GEOGRAPHY"},
    {"name": "tags", "type": "STRING", "mode": "REPEATED"},
    {"name": "flight-no", "type": "STRING"},
    {"name": "origin", "type": "RECORD", "fields": [
      {"name": "code", "type": "STRING"},
      {"name": "where", "type": "RECORD", "fields": [{"name": "lat", "type": "FLOAT64"}]}]}
  ])");
  ASSERT_TRUE(
      (*fake)
          ->add_table("p", "d",
                      {{"tableReference", {{"tableId", "t"}}}, {"schema", {{"fields", fields}}}})
          .ok());
  auto schema = TableSchemaFromJson(fields);
  ASSERT_TRUE(schema.ok()) << schema.status();
  auto encoder = JsonRowEncoder::Create(*schema);
  ASSERT_TRUE(encoder.ok()) << encoder.status();

  const auto row = nlohmann::json::parse(R"json({
    "id": 7, "name": "héllo", "score": 2.5, "ok": false, "raw": "AAE=",
    "amount": "-12345.000000001", "big": "0.00000000000000000000000000000000000001",
    "day": "0001-01-01", "when": "9999-12-31 23:59:59.999999", "clock": "07:05",
    "at": "2023-11-14T22:13:20.123456Z", "doc": {"a": [1, "x", null]},
    "place": "POINT(-73.78 40.64)", "tags": ["x", "y"], "flight-no": "AA100",
    "origin": {"code": "JFK", "where": {"lat": 40.64}}})json");
  auto bytes = (*encoder)->encode(row);
  ASSERT_TRUE(bytes.ok()) << bytes.status();

  auto stub = storage::BigQueryWrite::NewStub(
      grpc::CreateChannel((*fake)->grpc_endpoint(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 30s);
  auto rw = stub->AppendRows(&context);
  storage::AppendRowsRequest request;
  request.set_write_stream("projects/p/datasets/d/tables/t/streams/_default");
  *request.mutable_proto_rows()->mutable_writer_schema()->mutable_proto_descriptor() =
      (*encoder)->writer_descriptor();
  request.mutable_proto_rows()->mutable_rows()->add_serialized_rows(*bytes);
  ASSERT_TRUE(rw->Write(request));
  storage::AppendRowsResponse response;
  ASSERT_TRUE(rw->Read(&response));
  ASSERT_FALSE(response.has_error()) << response.error().message();
  rw->WritesDone();
  ASSERT_TRUE(rw->Finish().ok());

  auto rows = (*fake)->rows("projects/p/datasets/d/tables/t");
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 1u);
  const auto& got = (*rows)[0];
  EXPECT_EQ(got["id"], "7");
  EXPECT_EQ(got["name"], "héllo");
  EXPECT_EQ(got["score"], 2.5);
  EXPECT_EQ(got["ok"], false);
  EXPECT_EQ(got["raw"], "AAE=");
  EXPECT_EQ(got["amount"], "-12345.000000001");
  EXPECT_EQ(got["big"], "0.00000000000000000000000000000000000001");
  EXPECT_EQ(got["day"], "0001-01-01");
  EXPECT_EQ(got["when"], "9999-12-31T23:59:59.999999");
  EXPECT_EQ(got["clock"], "07:05:00");
  EXPECT_EQ(got["at"], "1700000000123456");
  EXPECT_EQ(nlohmann::json::parse(got["doc"].get<std::string>()), row["doc"]);
  EXPECT_EQ(got["place"], "POINT(-73.78 40.64)");
  EXPECT_EQ(got["tags"], row["tags"]);
  EXPECT_EQ(got["flight-no"], "AA100");
  EXPECT_EQ(got["origin"]["code"], "JFK");
  EXPECT_EQ(got["origin"]["where"]["lat"], 40.64);
}

}  // namespace
}  // namespace gcpstream::bigquery
