// Reading Storage Read API rows: the session's Avro schema mapped onto BigQuery columns (the
// mapping the Storage Read API documents under "Avro schema details"), rows of every type
// decoded from Avro binary as ReadRowsResponse.avro_rows carries them, NUMERIC / BIGNUMERIC
// decimals (Avro's decimal logical type: big-endian two's complement of the unscaled value),
// and refusals of blocks that do not hold what they claim. The rows are written by the fake
// BigQuery's own encoder (tests/fakes/bigquery/fake_avro.h), a separate implementation.
#include "gcpstream/bigquery/source/avro_row_decoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/fakes/bigquery/fake_avro.h"
#include "tests/fakes/bigquery/fake_table_schema.h"

namespace gcpstream::bigquery {
namespace {

using ::testing::HasSubstr;
namespace fake = testing::bigquery_fake;

fake::Schema EveryType() {
  auto schema = fake::ParseSchema(nlohmann::json::parse(R"([
    {"name": "b", "type": "BOOL"},
    {"name": "i", "type": "INT64", "mode": "REQUIRED"},
    {"name": "f", "type": "FLOAT64"},
    {"name": "s", "type": "STRING"},
    {"name": "by", "type": "BYTES"},
    {"name": "n", "type": "NUMERIC"},
    {"name": "bn", "type": "BIGNUMERIC"},
    {"name": "d", "type": "DATE"},
    {"name": "t", "type": "TIME"},
    {"name": "ts", "type": "TIMESTAMP"},
    {"name": "dt", "type": "DATETIME"},
    {"name": "g", "type": "GEOGRAPHY"},
    {"name": "j", "type": "JSON"},
    {"name": "tags", "type": "STRING", "mode": "REPEATED"},
    {"name": "rec", "type": "RECORD", "fields": [
      {"name": "x", "type": "INT64"},
      {"name": "inner", "type": "RECORD", "mode": "REPEATED", "fields": [
        {"name": "y", "type": "STRING"}]}]}
  ])"));
  EXPECT_TRUE(schema.ok()) << schema.status();
  return *schema;
}

nlohmann::json FullRow() {
  return nlohmann::json::parse(R"J({
    "b": true, "i": "-9007199254740993", "f": 2.5, "s": "héllo", "by": "AAEC/w==",
    "n": "-12.5", "bn": "123456789012345678901234567890.00000000000000000000000000000000000001",
    "d": "2026-08-09", "t": "23:59:58.000125", "ts": "1786233600000001",
    "dt": "2026-08-09T10:00:00.5", "g": "POINT(1 2)", "j": "{\"a\":[1,2]}",
    "tags": ["x", "y"],
    "rec": {"x": "7", "inner": [{"y": "p"}, {"y": null}]}
  })J");
}

absl::StatusOr<std::vector<BigQueryReadRow>> RoundTrip(const fake::Schema& schema,
                                                       const std::vector<nlohmann::json>& rows) {
  auto writer = fake::AvroRowsWriter::Create(schema);
  if (!writer.ok()) return writer.status();
  std::string block;
  for (const auto& r : rows) {
    if (absl::Status st = (*writer)->append(r, &block); !st.ok()) return st;
  }
  auto decoder = AvroRowDecoder::Create((*writer)->schema_json());
  if (!decoder.ok()) return decoder.status();
  std::vector<BigQueryReadRow> out;
  if (absl::Status st = (*decoder)->decode(block, static_cast<std::int64_t>(rows.size()), out);
      !st.ok()) {
    return st;
  }
  return out;
}

TEST(AvroReadSchemaTest, TheDocumentedAvroMappingGivesEveryColumnItsTypeAndMode) {
  auto parsed = ParseAvroReadSchema(fake::AvroSchemaFor(EveryType()));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const auto& f = parsed->columns->fields;
  ASSERT_EQ(f.size(), 15u);
  const std::vector<FieldType> types = {
      FieldType::kBool,  FieldType::kInt64,     FieldType::kFloat64,    FieldType::kString,
      FieldType::kBytes, FieldType::kNumeric,   FieldType::kBigNumeric, FieldType::kDate,
      FieldType::kTime,  FieldType::kTimestamp, FieldType::kDatetime,   FieldType::kGeography,
      FieldType::kJson,  FieldType::kString,    FieldType::kRecord};
  for (std::size_t i = 0; i < types.size(); ++i) {
    EXPECT_EQ(f[i].type, types[i]) << f[i].name;
  }
  EXPECT_EQ(f[0].mode, FieldMode::kNullable);
  EXPECT_EQ(f[1].mode, FieldMode::kRequired);
  EXPECT_EQ(f[13].mode, FieldMode::kRepeated);
  ASSERT_EQ(f[14].fields.size(), 2u);
  EXPECT_EQ(f[14].fields[1].type, FieldType::kRecord);
  EXPECT_EQ(f[14].fields[1].mode, FieldMode::kRepeated);
  EXPECT_EQ(parsed->plan[5].scale, 9);
  EXPECT_EQ(parsed->plan[6].scale, 38);
}

TEST(AvroReadSchemaTest, ShapesNoBigQueryColumnReadsAsAreRefusedNamingTheColumn) {
  auto refused = [](const std::string& type) {
    return ParseAvroReadSchema(absl::StrCat(
        R"({"type":"record","name":"__root__","fields":[{"name":"c","type":)", type, "}]}"));
  };
  for (const std::string& type :
       {std::string(R"(["null","long","string"])"),
        std::string(R"({"type":"map","values":"long"})"),
        std::string(R"({"type":"enum","name":"E","symbols":["A"]})"),
        std::string(R"({"type":"array","items":{"type":"array","items":"long"}})"),
        std::string(R"("NotDefinedYet")")}) {
    auto parsed = refused(type);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << type;
    EXPECT_THAT(parsed.status().message(), HasSubstr("'c'")) << type;
  }
  // Found by an attack: a bare "record" (no fields to read), decimal attributes of the wrong
  // JSON type, and an array of nullable elements are refused, not crashed on or misread.
  for (const std::string& type :
       {std::string(R"("record")"), std::string(R"(["null","record"])"),
        std::string(R"({"type":"array","items":"record"})"),
        std::string(R"({"type":"bytes","logicalType":"decimal","precision":38,"scale":"9"})"),
        std::string(R"({"type":"bytes","logicalType":"decimal","precision":true,"scale":9})"),
        std::string(
            R"({"type":"bytes","logicalType":"decimal","precision":38,"scale":4294967305})"),
        std::string(R"({"type":"array","items":["null","long"]})")}) {
    EXPECT_EQ(refused(type).status().code(), absl::StatusCode::kInvalidArgument) << type;
  }
  EXPECT_EQ(ParseAvroReadSchema("not json").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseAvroReadSchema(R"({"type":"record","name":"r","fields":[]})").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseAvroReadSchema(R"({"type":"record","name":"r","fields":[
      {"name":"a","type":"long"},{"name":"A","type":"long"}]})")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AvroRowDecoderTest, RowsOfEveryTypeDecodeToTheirValuesAndJson) {
  nlohmann::json nulls = {{"i", "1"}};  // every NULLABLE column absent
  auto rows = RoundTrip(EveryType(), {FullRow(), nulls});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  const BigQueryReadRow& row = (*rows)[0];
  EXPECT_EQ(*row.find("I")->as_int64(), -9007199254740993) << "beyond a double's precision";
  EXPECT_EQ(*row.find("ts")->as_int64(), 1786233600000001);
  EXPECT_EQ(*row.find("d")->as_int64(), 20674);  // days since 1970-01-01
  EXPECT_EQ(*row.find("t")->as_int64(), 86398000125);
  EXPECT_EQ(*row.find("by")->as_string(), std::string("\x00\x01\x02\xff", 4));
  const nlohmann::json json = row.to_json();
  EXPECT_EQ(json["b"], true);
  EXPECT_EQ(json["i"], -9007199254740993);
  EXPECT_EQ(json["f"], 2.5);
  EXPECT_EQ(json["s"], "héllo");
  EXPECT_EQ(json["by"], "AAEC/w==");
  EXPECT_EQ(json["n"], "-12.5");
  EXPECT_EQ(json["bn"], "123456789012345678901234567890.00000000000000000000000000000000000001");
  EXPECT_EQ(json["d"], "2026-08-09");
  EXPECT_EQ(json["t"], "23:59:58.000125");
  EXPECT_EQ(json["ts"], "2026-08-09T00:00:00.000001Z");
  EXPECT_EQ(json["dt"], "2026-08-09T10:00:00.5");
  EXPECT_EQ(json["g"], "POINT(1 2)");
  EXPECT_EQ(json["j"], "{\"a\":[1,2]}");
  EXPECT_EQ(json["tags"], nlohmann::json::parse(R"(["x","y"])"));
  EXPECT_EQ(json["rec"], nlohmann::json::parse(R"({"x":7,"inner":[{"y":"p"},{"y":null}]})"));

  const nlohmann::json empty = (*rows)[1].to_json();
  EXPECT_TRUE(empty["b"].is_null());
  EXPECT_TRUE(empty["rec"].is_null());
  EXPECT_EQ(empty["tags"], nlohmann::json::array()) << "BigQuery has no NULL array";
  EXPECT_TRUE((*rows)[1].find("n")->is_null());
  EXPECT_EQ((*rows)[1].find("nope"), nullptr);
  EXPECT_EQ((*rows)[1].find("n")->as_string().status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(AvroRowDecoderTest, DecimalsKeepEveryDigitAndSign) {
  EXPECT_EQ(DecimalFromTwosComplement("", 9), "0");
  EXPECT_EQ(DecimalFromTwosComplement("\xff", 0), "-1");
  EXPECT_EQ(DecimalFromTwosComplement("\xff", 9), "-0.000000001");
  EXPECT_EQ(DecimalFromTwosComplement(std::string("\x00\x80", 2), 0), "128");
  EXPECT_EQ(DecimalFromTwosComplement("\x80", 0), "-128");
  for (const std::string value :
       {"0", "1", "-1", "0.5", "-0.000000001", "99999999999999999999999999999.999999999",
        "-99999999999999999999999999999.999999999", "255", "-256", "32768", "1.25"}) {
    auto bytes = fake::DecimalToTwosComplement(value, 9);
    ASSERT_TRUE(bytes.ok()) << value;
    EXPECT_EQ(DecimalFromTwosComplement(*bytes, 9), value) << value;
  }
  const std::string widest =
      "-578960446186580977117854925043439539266.34992332820282019728792003956564819967";
  auto bytes = fake::DecimalToTwosComplement(widest, 38);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(DecimalFromTwosComplement(*bytes, 38), widest);
}

TEST(AvroRowDecoderTest, TextThatIsNotUtf8AndDecimalsWiderThanBigQuerysAreDataLoss) {
  auto schema = fake::ParseSchema(nlohmann::json::parse(
      R"([{"name": "s", "type": "STRING"}, {"name": "n", "type": "NUMERIC"}])"));
  ASSERT_TRUE(schema.ok());
  auto bad_text = RoundTrip(*schema, {{{"s", std::string("ok\xff")}, {"n", "1"}}});
  EXPECT_EQ(bad_text.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bad_text.status().message(), HasSubstr("not UTF-8"));
  auto wide = RoundTrip(*schema, {{{"s", "x"}, {"n", "1" + std::string(90, '0')}}});
  EXPECT_EQ(wide.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(wide.status().message(), HasSubstr("at most 32"));
  auto decoder = AvroRowDecoder::Create(fake::AvroSchemaFor(*schema));
  ASSERT_TRUE(decoder.ok());
  std::vector<BigQueryReadRow> out;
  EXPECT_EQ((*decoder)->decode("", -1, out).code(), absl::StatusCode::kDataLoss);
}

TEST(AvroRowDecoderTest, ABlockHoldingFewerOrMoreRowsThanItsCountIsDataLossAndLeavesNothing) {
  auto writer = fake::AvroRowsWriter::Create(EveryType());
  ASSERT_TRUE(writer.ok());
  std::string block;
  ASSERT_TRUE((*writer)->append(FullRow(), &block).ok());
  ASSERT_TRUE((*writer)->append(FullRow(), &block).ok());
  auto decoder = AvroRowDecoder::Create((*writer)->schema_json());
  ASSERT_TRUE(decoder.ok());
  std::vector<BigQueryReadRow> out;
  absl::Status more = (*decoder)->decode(block, 3, out);
  EXPECT_EQ(more.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(more.message(), HasSubstr("row 2"));
  EXPECT_TRUE(out.empty());
  absl::Status fewer = (*decoder)->decode(block, 1, out);
  EXPECT_EQ(fewer.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(fewer.message(), HasSubstr("more bytes"));
  EXPECT_TRUE(out.empty());
  absl::Status cut = (*decoder)->decode(block.substr(0, block.size() - 3), 2, out);
  EXPECT_EQ(cut.code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE((*decoder)->decode(block, 2, out).ok());
  EXPECT_EQ(out.size(), 2u);
}

}  // namespace
}  // namespace gcpstream::bigquery
