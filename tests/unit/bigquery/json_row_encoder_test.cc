// Table schemas (REST shape and the schema rules), the writer descriptor derived from one, and
// the strict JSON-to-row encoding with its row-level refusals.
#include "gcpstream/bigquery/schema/json_row_encoder.h"

#include <gmock/gmock.h>
#include <google/protobuf/dynamic_message.h>
#include <gtest/gtest.h>

#include "gcpstream/bigquery/schema/writer_descriptor.h"
#include "gcpstream/bigquery/sink/bigquery_writer_options.h"
#include "google/cloud/bigquery/storage/v1/annotations.pb.h"

namespace gcpstream::bigquery {
namespace {

using ::testing::HasSubstr;

nlohmann::json Fields() {
  return nlohmann::json::parse(R"([
    {"name": "id", "type": "INTEGER", "mode": "REQUIRED"},
    {"name": "name", "type": "STRING", "maxLength": "5"},
    {"name": "score", "type": "FLOAT"},
    {"name": "ok", "type": "BOOLEAN"},
    {"name": "raw", "type": "BYTES"},
    {"name": "amount", "type": "NUMERIC"},
    {"name": "day", "type": "DATE"},
    {"name": "at", "type": "TIMESTAMP"},
    {"name": "doc", "type": "JSON"},
    {"name": "tags", "type": "STRING", "mode": "REPEATED"},
    {"name": "my col", "type": "STRING"},
    {"name": "origin", "type": "STRUCT", "fields": [
      {"name": "code", "type": "STRING"},
      {"name": "where", "type": "RECORD", "fields": [{"name": "lat", "type": "FLOAT64"}]}]}
  ])");
}

TEST(TableSchemaTest, ParsesTheRestShapeWithLegacyNamesAndWritesStandardOnes) {
  auto schema = TableSchemaFromJson(Fields());
  ASSERT_TRUE(schema.ok()) << schema.status();
  ASSERT_EQ(schema->fields.size(), 12u);
  EXPECT_EQ(schema->fields[0].type, FieldType::kInt64);
  EXPECT_EQ(schema->fields[0].mode, FieldMode::kRequired);
  EXPECT_EQ(schema->fields[1].max_length, 5);
  EXPECT_EQ(schema->fields[11].type, FieldType::kRecord);
  const auto json = TableSchemaToJson(*schema);
  EXPECT_EQ(json[0]["type"], "INT64");
  EXPECT_EQ(json[2]["mode"], "NULLABLE");
  EXPECT_EQ(*TableSchemaFromJson(json), *schema);
}

TEST(TableSchemaTest, RefusesWhatBigQueryRefuses) {
  auto refused = [](const char* fields) {
    return TableSchemaFromJson(nlohmann::json::parse(fields)).status();
  };
  EXPECT_THAT(
      refused(R"([{"name": "a", "type": "STRING"}, {"name": "A", "type": "INT64"}])").message(),
      HasSubstr("twice"));
  EXPECT_THAT(refused(R"([{"name": "r", "type": "RECORD"}])").message(),
              HasSubstr("without sub-columns"));
  EXPECT_THAT(refused(R"([{"name": "a", "type": "WHATEVER"}])").message(), HasSubstr("unknown"));
  EXPECT_THAT(refused(R"([{"name": "a", "type": "INT64", "maxLength": 3}])").message(),
              HasSubstr("maxLength"));
  EXPECT_THAT(refused(R"([{"name": "", "type": "INT64"}])").message(), HasSubstr("characters"));
  EXPECT_FALSE(refused(R"([{"name": "a", "type": "INT64", "mode": "OPTIONAL"}])").ok());
  // "Column names": reserved prefixes, case-insensitively, nested columns too.
  EXPECT_THAT(refused(R"([{"name": "_PARTITIONTIME", "type": "TIMESTAMP"}])").message(),
              HasSubstr("reserved"));
  EXPECT_THAT(refused(R"([{"name": "r", "type": "RECORD", "fields": [
                {"name": "_table_suffix", "type": "STRING"}]}])")
                  .message(),
              HasSubstr("\"r._table_suffix\""));
  EXPECT_TRUE(refused(R"([{"name": "_partner", "type": "STRING"}])").ok());
  // Sixteen nested RECORDs: one more than BigQuery allows.
  nlohmann::json deep = {{{"name", "leaf"}, {"type", "STRING"}}};
  for (int i = 0; i < 16; ++i) deep = {{{"name", "r"}, {"type", "RECORD"}, {"fields", deep}}};
  EXPECT_THAT(TableSchemaFromJson(deep).status().message(), HasSubstr("15"));
}

TEST(TableSchemaTest, AtMostTenThousandColumnsCountingNestedOnes) {
  nlohmann::json fields = nlohmann::json::array();
  for (int i = 0; i < 9999; ++i)
    fields.push_back({{"name", "c" + std::to_string(i)}, {"type", "STRING"}});
  fields.push_back(
      {{"name", "r"}, {"type", "RECORD"}, {"fields", {{{"name", "x"}, {"type", "INT64"}}}}});
  auto refused = TableSchemaFromJson(fields);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("10001 columns"));
  fields.erase(fields.begin());
  EXPECT_TRUE(TableSchemaFromJson(fields).ok());
  EXPECT_FALSE(TableSchemaFromJson(nlohmann::json::array()).ok());
}

TEST(TableCreateOptionsTest, ClusteringAndPartitioningMustNameFittingColumns) {
  auto schema = TableSchemaFromJson(Fields());
  ASSERT_TRUE(schema.ok());
  TableCreateOptions o;
  o.clustering_fields = {"name", "day"};
  o.time_partitioning = {{"type", "DAY"}, {"field", "day"}};
  EXPECT_TRUE(o.validate(*schema).ok());
  o.clustering_fields = {"nope"};
  EXPECT_THAT(o.validate(*schema).message(), HasSubstr("nope"));
  o.clustering_fields = {"name", "NAME"};
  EXPECT_THAT(o.validate(*schema).message(), HasSubstr("twice"));
  o.clustering_fields = {"origin"};  // a RECORD
  EXPECT_FALSE(o.validate(*schema).ok());
  o.clustering_fields.clear();
  o.time_partitioning = {{"field", "name"}};  // a STRING
  EXPECT_THAT(o.validate(*schema).message(), HasSubstr("DATE, TIMESTAMP or DATETIME"));
  o.time_partitioning = {{"type", "WEEK"}};
  EXPECT_FALSE(o.validate(*schema).ok());
}

TEST(TableCreateOptionsTest, RestEndpointsAreHttpHostAndPort) {
  EXPECT_TRUE(ValidateRestEndpoint("http://127.0.0.1:9050").ok());
  EXPECT_TRUE(ValidateRestEndpoint("https://bigquery.googleapis.com").ok());
  for (const char* bad :
       {"ftp://127.0.0.1:9051", "notaurl", "http://h", "http://h:1/path", "http://user@h:1", ""}) {
    EXPECT_FALSE(ValidateRestEndpoint(bad).ok()) << bad;
  }
}

TEST(WriterDescriptorTest, EachColumnTakesItsDocumentedWireTypeAndFlexibleNamesAnOption) {
  auto schema = TableSchemaFromJson(Fields());
  ASSERT_TRUE(schema.ok());
  auto d = WriterDescriptorFor(*schema);
  ASSERT_TRUE(d.ok()) << d.status();
  using F = google::protobuf::FieldDescriptorProto;
  EXPECT_EQ(d->field(0).type(), F::TYPE_INT64);
  EXPECT_EQ(d->field(0).label(), F::LABEL_OPTIONAL);  // the service enforces REQUIRED
  EXPECT_EQ(d->field(5).type(), F::TYPE_BYTES);       // NUMERIC
  EXPECT_EQ(d->field(6).type(), F::TYPE_INT32);       // DATE
  EXPECT_EQ(d->field(7).type(), F::TYPE_INT64);       // TIMESTAMP
  EXPECT_EQ(d->field(9).label(), F::LABEL_REPEATED);
  EXPECT_EQ(d->field(10).name(), "_col11");
  EXPECT_EQ(d->field(10).options().GetExtension(google::cloud::bigquery::storage::v1::column_name),
            "my col");
  EXPECT_EQ(d->field(11).type(), F::TYPE_MESSAGE);
  ASSERT_EQ(d->nested_type_size(), 1);
  EXPECT_EQ(d->nested_type(0).nested_type_size(), 1);
}

class JsonRowEncoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto schema = TableSchemaFromJson(Fields());
    ASSERT_TRUE(schema.ok());
    auto encoder = JsonRowEncoder::Create(*schema);
    ASSERT_TRUE(encoder.ok()) << encoder.status();
    encoder_ = std::move(*encoder);
  }
  absl::Status Refusal(const char* row) {
    return encoder_->encode(nlohmann::json::parse(row)).status();
  }
  std::unique_ptr<JsonRowEncoder> encoder_;
};

TEST_F(JsonRowEncoderTest, EncodesEveryColumnTypeIntoTheWriterMessage) {
  auto bytes = encoder_->encode(nlohmann::json::parse(R"({
    "id": "42", "name": "héllo", "score": "NaN", "ok": true, "raw": "AAE=",
    "amount": "-1.5", "day": "2024-02-29", "at": 1700000000123456, "doc": {"k": [1, null]},
    "tags": ["a", "b"], "my col": "x", "origin": {"code": "JFK", "where": {"lat": 40.6}}})"));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  google::protobuf::DescriptorPool pool;
  google::protobuf::FileDescriptorProto file;
  file.set_name("t.proto");
  *file.add_message_type() = encoder_->writer_descriptor();
  const auto* d = pool.BuildFile(file)->message_type(0);
  google::protobuf::DynamicMessageFactory factory(&pool);
  std::unique_ptr<google::protobuf::Message> m(factory.GetPrototype(d)->New());
  ASSERT_TRUE(m->ParseFromString(*bytes));
  const auto* r = m->GetReflection();
  EXPECT_EQ(r->GetInt64(*m, d->FindFieldByName("id")), 42);
  EXPECT_EQ(r->GetString(*m, d->FindFieldByName("raw")), std::string("\x00\x01", 2));
  EXPECT_EQ(r->GetString(*m, d->FindFieldByName("doc")), R"({"k":[1,null]})");
  EXPECT_EQ(r->GetInt32(*m, d->FindFieldByName("day")), 19782);
  EXPECT_EQ(r->FieldSize(*m, d->FindFieldByName("tags")), 2);
  EXPECT_TRUE(std::isnan(r->GetDouble(*m, d->FindFieldByName("score"))));
  // An absent NULLABLE column stays unset.
  auto sparse = encoder_->encode({{"id", 1}, {"name", nullptr}});
  ASSERT_TRUE(sparse.ok());
  std::unique_ptr<google::protobuf::Message> s(factory.GetPrototype(d)->New());
  ASSERT_TRUE(s->ParseFromString(*sparse));
  EXPECT_FALSE(s->GetReflection()->HasField(*s, d->FindFieldByName("name")));
}

TEST_F(JsonRowEncoderTest, RefusesRowsStrictlyNamingTheColumn) {
  EXPECT_THAT(Refusal(R"({"name": "a"})").message(), HasSubstr("\"id\": REQUIRED"));
  EXPECT_THAT(Refusal(R"({"id": 1, "surprise": 1})").message(), HasSubstr("surprise"));
  EXPECT_THAT(Refusal(R"({"id": 1, "name": 7})").message(), HasSubstr("expected a string"));
  EXPECT_THAT(Refusal(R"({"id": 1, "name": "toolong"})").message(), HasSubstr("maxLength"));
  EXPECT_THAT(Refusal(R"({"id": "9223372036854775808"})").message(), HasSubstr("int64"));
  EXPECT_THAT(Refusal(R"({"id": 9223372036854775808})").message(), HasSubstr("int64"));
  EXPECT_THAT(Refusal(R"({"id": 1.5})").message(), HasSubstr("int64"));
  EXPECT_THAT(Refusal(R"({"id": 1, "raw": "not base64!"})").message(), HasSubstr("base64"));
  EXPECT_THAT(Refusal(R"({"id": 1, "amount": 1.25})").message(), HasSubstr("decimal"));
  EXPECT_THAT(Refusal(R"({"id": 1, "day": "2023-02-29"})").message(), HasSubstr("\"day\""));
  EXPECT_THAT(Refusal(R"({"id": 1, "tags": "a"})").message(), HasSubstr("array"));
  EXPECT_THAT(Refusal(R"({"id": 1, "tags": ["a", null]})").message(), HasSubstr("tags[1]"));
  EXPECT_THAT(Refusal(R"({"id": 1, "origin": {"where": {"lat": "x"}}})").message(),
              HasSubstr("origin.where.lat"));
  EXPECT_THAT(Refusal(R"({"id": 1, "ok": "true"})").message(), HasSubstr("boolean"));
  EXPECT_THAT(Refusal("[1]").message(), HasSubstr("JSON object"));
  nlohmann::json deep = 1;
  for (int i = 0; i < 100; ++i) deep = nlohmann::json::array({deep});
  EXPECT_THAT(encoder_->encode({{"id", 1}, {"doc", deep}}).status().message(), HasSubstr("deeper"));
  EXPECT_THAT(
      encoder_->encode({{"id", 1}, {"name", std::string("\xC3\x28", 2)}}).status().message(),
      HasSubstr("UTF-8"));
}

}  // namespace
}  // namespace gcpstream::bigquery
