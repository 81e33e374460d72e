// FILE_LOADS staging encoding: the Avro schema of every BigQuery type (BigQuery "Loading Avro
// data from Cloud Storage", logical types), proto rows encoded to Avro datums and framed as an
// object container (Avro 1.11 specification, "Object Container Files"), read back by Avro C's
// own file reader and by the fake's load-job reader.
#include <avro.h>
#include <gtest/gtest.h>

#include <cstdio>

#include "gcpstream/bigquery/schema/wire_values.h"
#include "gcpstream/bigquery/schema/writer_descriptor.h"
#include "gcpstream/bigquery/staging/avro_container.h"
#include "gcpstream/bigquery/staging/avro_row_encoder.h"
#include "gcpstream/bigquery/staging/avro_staging_schema.h"
#include "tests/fakes/bigquery/fake_avro_load.h"

namespace gcpstream::bigquery::staging {
namespace {

using google::protobuf::Message;
using nlohmann::json;

TableFieldSchema Col(std::string name, FieldType type, FieldMode mode = FieldMode::kNullable) {
  TableFieldSchema f;
  f.name = std::move(name);
  f.type = type;
  f.mode = mode;
  return f;
}

// One column of every type the staging path carries, plus a REQUIRED, a REPEATED and a RECORD.
TableSchema EveryType() {
  TableSchema s;
  s.fields = {Col("s", FieldType::kString, FieldMode::kRequired),
              Col("b", FieldType::kBytes),
              Col("i", FieldType::kInt64),
              Col("f", FieldType::kFloat64),
              Col("ok", FieldType::kBool),
              Col("n", FieldType::kNumeric),
              Col("bn", FieldType::kBigNumeric),
              Col("ts", FieldType::kTimestamp),
              Col("d", FieldType::kDate),
              Col("t", FieldType::kTime),
              Col("dt", FieldType::kDatetime),
              Col("j", FieldType::kJson),
              Col("g", FieldType::kGeography),
              Col("tags", FieldType::kString, FieldMode::kRepeated)};
  TableFieldSchema rec = Col("rec", FieldType::kRecord);
  rec.fields = {Col("x", FieldType::kInt64), Col("when", FieldType::kTimestamp)};
  s.fields.push_back(rec);
  return s;
}

class Rows {
 public:
  explicit Rows(const TableSchema& schema) : type_(*WriterRowType::Create(schema)) {}
  std::unique_ptr<Message> New() const { return type_->NewRow(); }
  const google::protobuf::DescriptorProto& proto() const { return type_->proto(); }
  static void Set(Message& m, const std::string& name, const auto& value) {
    const auto* f = m.GetDescriptor()->FindFieldByName(name);
    ASSERT_NE(f, nullptr) << name;
    const auto* r = m.GetReflection();
    using V = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<V, std::string> || std::is_same_v<V, const char*>) {
      if (f->is_repeated()) {
        r->AddString(&m, f, value);
      } else {
        r->SetString(&m, f, value);
      }
    } else if constexpr (std::is_same_v<V, bool>) {
      r->SetBool(&m, f, value);
    } else if constexpr (std::is_same_v<V, double>) {
      r->SetDouble(&m, f, value);
    } else if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_INT32) {
      r->SetInt32(&m, f, static_cast<std::int32_t>(value));
    } else {
      r->SetInt64(&m, f, static_cast<std::int64_t>(value));
    }
  }

 private:
  std::unique_ptr<WriterRowType> type_;
};

testing::bigquery_fake::Schema FakeSchema(const TableSchema& schema) {
  return *testing::bigquery_fake::ParseSchema(TableSchemaToJson(schema));
}

std::string Container(AvroRowEncoder& encoder, const std::vector<std::string>& rows,
                      AvroCodec codec, std::size_t block_bytes = 1 << 20) {
  AvroContainerWriter writer(encoder.schema_json(), codec, block_bytes);
  std::string file;
  writer.start(&file);
  for (const std::string& row : rows) {
    std::string datum;
    EXPECT_TRUE(encoder.encode(row, &datum).ok());
    EXPECT_TRUE(writer.add(datum, &file).ok());
  }
  EXPECT_TRUE(writer.flush(&file).ok());
  return file;
}

TEST(AvroStagingSchema, EveryTypeMapsToTheLoadJobsAvroType) {
  auto schema = AvroStagingSchema(EveryType());
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ((*schema)["name"], "__root__");
  std::map<std::string, json> by_name;
  for (const json& f : (*schema)["fields"]) by_name[f["name"]] = f["type"];
  EXPECT_EQ(by_name["s"], "string") << "REQUIRED: no union";
  EXPECT_EQ(by_name["b"], json::parse(R"(["null","bytes"])"));
  EXPECT_EQ(by_name["i"][1], "long");
  EXPECT_EQ(by_name["f"][1], "double");
  EXPECT_EQ(by_name["ok"][1], "boolean");
  EXPECT_EQ(by_name["n"][1],
            json::parse(R"({"type":"bytes","logicalType":"decimal","precision":38,"scale":9})"));
  EXPECT_EQ(by_name["bn"][1],
            json::parse(R"({"type":"bytes","logicalType":"decimal","precision":77,"scale":38})"));
  EXPECT_EQ(by_name["ts"][1], json::parse(R"({"type":"long","logicalType":"timestamp-micros"})"));
  EXPECT_EQ(by_name["d"][1], json::parse(R"({"type":"int","logicalType":"date"})"));
  EXPECT_EQ(by_name["t"][1], json::parse(R"({"type":"long","logicalType":"time-micros"})"));
  EXPECT_EQ(by_name["dt"][1],
            json::parse(R"({"type":"long","logicalType":"local-timestamp-micros"})"));
  EXPECT_EQ(by_name["j"][1], json::parse(R"({"type":"string","sqlType":"JSON"})"));
  EXPECT_EQ(by_name["g"][1], json::parse(R"({"type":"string","sqlType":"GEOGRAPHY"})"));
  EXPECT_EQ(by_name["tags"], json::parse(R"({"type":"array","items":"string"})"))
      << "REPEATED: an array, never null";
  EXPECT_EQ(by_name["rec"][1]["type"], "record");
  EXPECT_EQ(by_name["rec"][1]["name"], "__record_1");
}

TEST(AvroStagingSchema, IntervalAndFlexibleColumnNamesAreRefusedNamingTheColumn) {
  TableSchema interval;
  TableFieldSchema rec = Col("outer", FieldType::kRecord);
  rec.fields = {Col("span", FieldType::kInterval)};
  interval.fields = {rec};
  auto refused = AvroStagingSchema(interval);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("outer.span"), std::string::npos) << refused.status();
  TableSchema flexible;
  flexible.fields = {Col("price-usd", FieldType::kInt64)};
  refused = AvroStagingSchema(flexible);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("price-usd"), std::string::npos);
}

TEST(AvroRowEncoder, EveryTypeRoundTripsThroughEveryCodecAndTheFakesLoadReader) {
  const TableSchema schema = EveryType();
  Rows rows(schema);
  auto full = rows.New();
  Rows::Set(*full, "s", std::string("héllo"));
  Rows::Set(*full, "b", std::string("\x00\xff", 2));
  Rows::Set(*full, "i", std::int64_t{-9007199254740993});
  Rows::Set(*full, "f", 2.5);
  Rows::Set(*full, "ok", true);
  Rows::Set(*full, "n", *wire::EncodeNumeric("-12345678901234567890123456789.123456789"));
  Rows::Set(*full, "bn", *wire::EncodeBigNumeric("0.00000000000000000000000000000000000001"));
  Rows::Set(*full, "ts", *wire::EncodeTimestamp("2026-12-07T04:05:06.789012Z"));
  Rows::Set(*full, "d", *wire::EncodeDate("0001-01-01"));
  Rows::Set(*full, "t", *wire::EncodeTime("23:59:59.999999"));
  Rows::Set(*full, "dt", *wire::EncodeDatetime("1969-12-31T23:59:59.5"));
  Rows::Set(*full, "j", std::string(R"({"a":[1,2]})"));
  Rows::Set(*full, "g", std::string("POINT(1 2)"));
  Rows::Set(*full, "tags", std::string("x"));
  Rows::Set(*full, "tags", std::string("y"));
  {
    const auto* rec = full->GetDescriptor()->FindFieldByName("rec");
    Message* sub = full->GetReflection()->MutableMessage(full.get(), rec);
    Rows::Set(*sub, "x", std::int64_t{7});
    Rows::Set(*sub, "when", std::int64_t{0});
  }
  auto sparse = rows.New();  // only the REQUIRED column
  Rows::Set(*sparse, "s", std::string(""));

  const json expected_full = json::parse(R"js({
    "s": "héllo", "b": "AP8=", "i": "-9007199254740993", "f": 2.5, "ok": true,
    "n": "-12345678901234567890123456789.123456789",
    "bn": "0.00000000000000000000000000000000000001",
    "ts": "1796616306789012", "d": "0001-01-01", "t": "23:59:59.999999",
    "dt": "1969-12-31T23:59:59.500000", "j": "{\"a\":[1,2]}", "g": "POINT(1 2)",
    "tags": ["x", "y"], "rec": {"x": "7", "when": "0"}})js");
  const json expected_sparse = json::parse(R"({
    "s": "", "b": null, "i": null, "f": null, "ok": null, "n": null, "bn": null, "ts": null,
    "d": null, "t": null, "dt": null, "j": null, "g": null, "tags": [], "rec": null})");

  auto encoder = AvroRowEncoder::Create(schema, rows.proto());
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  for (AvroCodec codec : {AvroCodec::kNull, AvroCodec::kDeflate, AvroCodec::kZstandard}) {
    SCOPED_TRACE(std::string(AvroCodecName(codec)));
    const std::string file =
        Container(**encoder, {full->SerializeAsString(), sparse->SerializeAsString()}, codec);
    auto loaded = testing::bigquery_fake::ReadAvroForLoad(file, FakeSchema(schema), true);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    ASSERT_EQ(loaded->size(), 2u);
    EXPECT_EQ((*loaded)[0], expected_full) << (*loaded)[0].dump();
    EXPECT_EQ((*loaded)[1], expected_sparse) << (*loaded)[1].dump();
    auto raw = testing::bigquery_fake::ReadAvroForLoad(file, FakeSchema(schema), false);
    EXPECT_EQ(raw.status().code(), absl::StatusCode::kInvalidArgument)
        << "without useAvroLogicalTypes a timestamp-micros long cannot fill a TIMESTAMP";
  }
}

TEST(AvroContainerWriter, AvroCsOwnFileReaderReadsTheContainerAndItsLogicalTypes) {
  const TableSchema schema = EveryType();
  Rows rows(schema);
  auto encoder = AvroRowEncoder::Create(schema, rows.proto());
  ASSERT_TRUE(encoder.ok());
  std::vector<std::string> protos;
  for (int i = 0; i < 50; ++i) {
    auto m = rows.New();
    Rows::Set(*m, "s", "row " + std::to_string(i));
    Rows::Set(*m, "i", std::int64_t{i});
    protos.push_back(m->SerializeAsString());
  }
  for (AvroCodec codec : {AvroCodec::kNull, AvroCodec::kDeflate}) {  // Avro C has no zstandard
    SCOPED_TRACE(std::string(AvroCodecName(codec)));
    std::string file = Container(**encoder, protos, codec, /*block_bytes=*/64);
    FILE* fp = fmemopen(file.data(), file.size(), "rb");
    ASSERT_NE(fp, nullptr);
    avro_file_reader_t reader;
    ASSERT_EQ(avro_file_reader_fp(fp, "staging.avro", 1, &reader), 0) << avro_strerror();
    avro_schema_t writer_schema = avro_file_reader_get_writer_schema(reader);
    avro_value_iface_t* iface = avro_generic_class_from_schema(writer_schema);
    avro_value_t value;
    avro_generic_value_new(iface, &value);
    int read = 0;
    while (avro_file_reader_read_value(reader, &value) == 0) {
      avro_value_t s;
      const char* text = nullptr;
      std::size_t size = 0;
      avro_value_get_by_name(&value, "s", &s, nullptr);
      avro_value_get_string(&s, &text, &size);
      EXPECT_EQ(std::string(text, size - 1), "row " + std::to_string(read));
      ++read;
    }
    EXPECT_EQ(read, 50);
    avro_value_decref(&value);
    avro_value_iface_decref(iface);
    avro_file_reader_close(reader);
  }
  // The header carries the schema text as given, logical types included (Avro C's own writer
  // would have dropped them).
  const std::string file = Container(**encoder, protos, AvroCodec::kNull);
  EXPECT_NE(file.find("\"logicalType\":\"timestamp-micros\""), std::string::npos);
  EXPECT_NE(file.find("\"sqlType\":\"JSON\""), std::string::npos);
}

TEST(AvroContainerWriter, ABlockClosesAtItsSizeAndAHugeDatumIsRefused) {
  AvroContainerWriter writer(R"("string")", AvroCodec::kNull, /*block_bytes=*/10);
  std::string file;
  writer.start(&file);
  const std::size_t header = file.size();
  ASSERT_TRUE(writer
                  .add(std::string("\x08"
                                   "abcd",
                                   5),
                       &file)
                  .ok());
  EXPECT_EQ(file.size(), header) << "a 5-byte block stays open below 10 bytes";
  ASSERT_TRUE(writer
                  .add(std::string("\x0a"
                                   "abcde",
                                   6),
                       &file)
                  .ok());
  EXPECT_GT(file.size(), header) << "11 bytes close the block";
  EXPECT_EQ(writer.pending_bytes(), 0u);
  EXPECT_EQ(writer.rows(), 2);
  EXPECT_EQ(writer.add(std::string(AvroContainerWriter::kMaxBlockBytes + 1, 'x'), &file).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseAvroCodec("snappy").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseAvroCodec("zstandard"), AvroCodec::kZstandard);
}

TEST(AvroRowEncoder, EveryValueALoadWouldRefuseIsRefusedRowByRowNamingTheColumn) {
  TableSchema schema = EveryType();
  schema.fields[0].max_length = 3;  // s
  Rows rows(schema);
  auto encoder = AvroRowEncoder::Create(schema, rows.proto());
  ASSERT_TRUE(encoder.ok());
  struct Case {
    std::string column;
    std::function<void(Message&)> set;
  };
  const std::vector<Case> cases = {
      {"s", [](Message&) {}},  // the REQUIRED column missing
      {"s", [](Message& m) { Rows::Set(m, "s", std::string("\xc3\x28")); }},
      {"s", [](Message& m) { Rows::Set(m, "s", std::string("four")); }},
      {"j", [](Message& m) { Rows::Set(m, "j", std::string("{not json")); }},
      {"d", [](Message& m) { Rows::Set(m, "d", std::int64_t{2932897}); }},
      {"ts", [](Message& m) { Rows::Set(m, "ts", std::int64_t{253402300800000000}); }},
      {"t", [](Message& m) { Rows::Set(m, "t", std::int64_t{24} << 32); }},
      {"dt", [](Message& m) { Rows::Set(m, "dt", std::int64_t{-1}); }},
      {"n",
       [](Message& m) { Rows::Set(m, "n", *wire::EncodeBigNumeric("1" + std::string(30, '0'))); }},
  };
  for (const Case& c : cases) {
    auto m = rows.New();
    if (c.column != "s") Rows::Set(*m, "s", std::string("ok"));
    c.set(*m);
    std::string out = "kept";
    absl::Status st = (*encoder)->encode(m->SerializeAsString(), &out);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.column;
    EXPECT_NE(st.message().find("column " + c.column), std::string::npos) << st;
    EXPECT_EQ(out, "kept") << "a refused row leaves the output as it was";
  }
  std::string out;
  EXPECT_EQ((*encoder)->encode("\xff\xff\xff", &out).code(), absl::StatusCode::kInvalidArgument);
}

TEST(AvroRowEncoder, AWriterSchemaThatCannotFeedTheTableIsRefusedAtCreation) {
  TableSchema table;
  table.fields = {Col("id", FieldType::kInt64, FieldMode::kRequired),
                  Col("name", FieldType::kString)};
  TableSchema writer_table;
  writer_table.fields = {Col("ID", FieldType::kString), Col("name", FieldType::kString)};
  auto wrong_type = AvroRowEncoder::Create(table, Rows(writer_table).proto());
  EXPECT_EQ(wrong_type.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_type.status().message().find("column id"), std::string::npos)
      << wrong_type.status();
  writer_table.fields = {Col("name", FieldType::kString)};
  auto missing = AvroRowEncoder::Create(table, Rows(writer_table).proto());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("REQUIRED"), std::string::npos) << missing.status();
  writer_table.fields = {Col("id", FieldType::kInt64, FieldMode::kRepeated)};
  auto repeated = AvroRowEncoder::Create(table, Rows(writer_table).proto());
  EXPECT_EQ(repeated.status().code(), absl::StatusCode::kInvalidArgument);
  // Matching is case-insensitive and an extra writer field is simply not staged.
  writer_table.fields = {Col("ID", FieldType::kInt64), Col("extra", FieldType::kBool)};
  EXPECT_TRUE(AvroRowEncoder::Create(table, Rows(writer_table).proto()).ok());
}

}  // namespace
}  // namespace gcpstream::bigquery::staging
