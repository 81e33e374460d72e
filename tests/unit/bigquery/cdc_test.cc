// The CDC pieces of the BigQuery sink: sequence values as BigQuery takes them (one to four
// '/'-separated sections of up to 16 hex digits, per the CDC docs), the writer descriptor with
// the pseudocolumns, the pseudocolumns appended to a serialized row, and the table contract.
#include "gcpstream/bigquery/sink/cdc.h"

#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <gtest/gtest.h>

#include "gcpstream/bigquery/schema/writer_descriptor.h"

namespace gcpstream::bigquery {
namespace {

using ::testing::HasSubstr;

TableSchema Schema() {
  return *TableSchemaFromJson(nlohmann::json::parse(R"([
    {"name": "id", "type": "INT64", "mode": "REQUIRED"},
    {"name": "region", "type": "STRING"},
    {"name": "tags", "type": "STRING", "mode": "REPEATED"},
    {"name": "address", "type": "RECORD", "fields": [{"name": "city", "type": "STRING"}]}])"));
}

TEST(CdcSequenceNumberTest, ValidValuesAreUppercasedAndKeptOtherwise) {
  EXPECT_EQ(*CanonicalChangeSequenceNumber("0"), "0");
  EXPECT_EQ(*CanonicalChangeSequenceNumber("a1/ff/0/DEADbeef"), "A1/FF/0/DEADBEEF");
  EXPECT_EQ(*CanonicalChangeSequenceNumber("FFFFFFFFFFFFFFFF"), "FFFFFFFFFFFFFFFF");
}

TEST(CdcSequenceNumberTest, InvalidValuesAreRefusedSayingWhy) {
  struct Case {
    const char* value;
    const char* why;
  };
  for (const Case& c :
       {Case{"", "empty"}, Case{"1/2/3/4/5", "5 sections"}, Case{"1//2", "section 2"},
        Case{"1/", "section 2"}, Case{"10000000000000000", "17 digits"},
        Case{"12g", "not a hexadecimal"}, Case{"-1", "not a hexadecimal"},
        Case{"0x10", "not a hexadecimal"}, Case{"1 ", "not a hexadecimal"}}) {
    auto refused = CanonicalChangeSequenceNumber(c.value);
    ASSERT_FALSE(refused.ok()) << c.value;
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << c.value;
    EXPECT_THAT(std::string(refused.status().message()), HasSubstr(c.why)) << c.value;
  }
}

TEST(CdcSequenceNumberTest, FormattedSectionsArePaddedToSixteenDigits) {
  const std::uint64_t spanner[] = {0x17306D33FB84D440ULL, 1, 0};
  EXPECT_EQ(*FormatChangeSequenceNumber(spanner),
            "17306D33FB84D440/0000000000000001/0000000000000000");
  const std::uint64_t max[] = {~0ULL};
  EXPECT_EQ(*FormatChangeSequenceNumber(max), "FFFFFFFFFFFFFFFF");
  // Padded values sort as text the way BigQuery orders them as numbers.
  const std::uint64_t small[] = {2, 0xFFFF}, large[] = {0x10, 0};
  EXPECT_LT(*FormatChangeSequenceNumber(small), *FormatChangeSequenceNumber(large));
  EXPECT_FALSE(FormatChangeSequenceNumber({}).ok());
  const std::uint64_t five[] = {1, 2, 3, 4, 5};
  EXPECT_FALSE(FormatChangeSequenceNumber(five).ok());
}

TEST(CdcWriterDescriptorTest, ThePseudocolumnsFollowTheHighestFieldAndTravelWithTheRow) {
  auto base = WriterDescriptorFor(Schema());
  ASSERT_TRUE(base.ok()) << base.status();
  auto d = MakeCdcWriterDescriptor(*base, Schema(), /*with_sequence=*/true);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->change_type_field, 5);
  EXPECT_EQ(d->sequence_number_field, 6);
  ASSERT_EQ(d->descriptor.field_size(), 6);
  EXPECT_EQ(d->descriptor.field(4).name(), "_CHANGE_TYPE");
  EXPECT_EQ(d->descriptor.field(5).name(), "_CHANGE_SEQUENCE_NUMBER");

  // A row of the base descriptor with the pseudocolumns appended parses as the CDC descriptor.
  google::protobuf::DescriptorPool pool;
  google::protobuf::FileDescriptorProto file;
  file.set_name("cdc_test.proto");
  *file.add_message_type() = d->descriptor;
  const auto* built = pool.BuildFile(file);
  ASSERT_NE(built, nullptr);
  google::protobuf::DynamicMessageFactory factory(&pool);
  const auto* type = built->message_type(0);
  std::unique_ptr<google::protobuf::Message> row(factory.GetPrototype(type)->New());
  row->GetReflection()->SetInt64(row.get(), type->FindFieldByName("id"), 42);
  std::string bytes = row->SerializeAsString();
  ASSERT_TRUE(AppendCdcPseudocolumns(*d, ChangeType::kDelete, std::string("ab/1"), &bytes).ok());
  std::unique_ptr<google::protobuf::Message> parsed(factory.GetPrototype(type)->New());
  ASSERT_TRUE(parsed->ParseFromString(bytes));
  const auto* r = parsed->GetReflection();
  EXPECT_EQ(r->GetInt64(*parsed, type->FindFieldByName("id")), 42);
  EXPECT_EQ(r->GetString(*parsed, type->FindFieldByName("_CHANGE_TYPE")), "DELETE");
  EXPECT_EQ(r->GetString(*parsed, type->FindFieldByName("_CHANGE_SEQUENCE_NUMBER")), "AB/1");
}

TEST(CdcWriterDescriptorTest, ARowIsLeftAsItWasWhenItsMetadataIsRefused) {
  auto base = WriterDescriptorFor(Schema());
  ASSERT_TRUE(base.ok());
  auto with = MakeCdcWriterDescriptor(*base, Schema(), true);
  auto without = MakeCdcWriterDescriptor(*base, Schema(), false);
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_EQ(without->sequence_number_field, 0);
  std::string row = "\x08\x01";
  EXPECT_FALSE(AppendCdcPseudocolumns(*with, ChangeType::kUpsert, std::nullopt, &row).ok());
  EXPECT_FALSE(AppendCdcPseudocolumns(*with, ChangeType::kUpsert, std::string("z"), &row).ok());
  EXPECT_FALSE(AppendCdcPseudocolumns(*without, ChangeType::kUpsert, std::string("1"), &row).ok());
  EXPECT_FALSE(
      AppendCdcPseudocolumns(*without, static_cast<ChangeType>(7), std::nullopt, &row).ok());
  EXPECT_EQ(row, "\x08\x01");
  ASSERT_TRUE(AppendCdcPseudocolumns(*without, ChangeType::kUpsert, std::nullopt, &row).ok());
  EXPECT_EQ(row, std::string("\x08\x01") + "\x2a\x06UPSERT");  // field 5, length 6
}

TEST(CdcWriterDescriptorTest, FieldNumbersSkipProtobufsReservedRange) {
  google::protobuf::DescriptorProto base;
  base.set_name("Row");
  auto* f = base.add_field();
  f->set_name("id");
  f->set_number(18999);
  f->set_type(google::protobuf::FieldDescriptorProto::TYPE_INT64);
  auto d = MakeCdcWriterDescriptor(base, TableSchema{}, true);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->change_type_field, 20000);
  EXPECT_EQ(d->sequence_number_field, 20001);
  f->set_number(google::protobuf::FieldDescriptor::kMaxNumber);
  EXPECT_EQ(MakeCdcWriterDescriptor(base, TableSchema{}, false).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CdcWriterDescriptorTest, AColumnNamedLikeAPseudocolumnIsAConfigurationError) {
  auto schema = *TableSchemaFromJson(nlohmann::json::parse(
      R"([{"name": "id", "type": "INT64"}, {"name": "_Change_Sequence_Number", "type": "STRING"}])"));
  auto base = WriterDescriptorFor(schema);
  ASSERT_TRUE(base.ok());
  auto refused = MakeCdcWriterDescriptor(*base, schema, false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("_Change_Sequence_Number"));
}

TEST(CdcTableOptionsTest, AKeyNamesAtMostSixteenDistinctScalarTopLevelColumns) {
  CdcTableOptions o;
  EXPECT_TRUE(o.validate(Schema()).ok()) << "an undeclared key is for an existing table";
  o.primary_key_columns = {"ID", "region"};
  EXPECT_TRUE(o.validate(Schema()).ok());
  o.primary_key_columns = {"id", "Id"};
  EXPECT_THAT(std::string(o.validate(Schema()).message()), HasSubstr("twice"));
  o.primary_key_columns = {"tags"};
  EXPECT_THAT(std::string(o.validate(Schema()).message()), HasSubstr("REPEATED"));
  o.primary_key_columns = {"address"};
  EXPECT_THAT(std::string(o.validate(Schema()).message()), HasSubstr("RECORD"));
  o.primary_key_columns = {"city"};
  EXPECT_THAT(std::string(o.validate(Schema()).message()), HasSubstr("not a top-level column"));
  o.primary_key_columns.assign(17, "id");
  EXPECT_THAT(std::string(o.validate(Schema()).message()), HasSubstr("at most 16"));
}

TEST(CdcTableContractTest, ATableMustDeclareTheSameKeyOverColumnsTheRowsCarry) {
  const nlohmann::json keyed = {
      {"tableConstraints", {{"primaryKey", {{"columns", {"id", "region"}}}}}}};
  CdcTableOptions undeclared;
  EXPECT_TRUE(VerifyCdcTable("t", keyed, undeclared, Schema()).ok());
  CdcTableOptions same;
  same.primary_key_columns = {"ID", "Region"};
  EXPECT_TRUE(VerifyCdcTable("t", keyed, same, Schema()).ok());
  CdcTableOptions reordered;
  reordered.primary_key_columns = {"region", "id"};
  EXPECT_EQ(VerifyCdcTable("t", keyed, reordered, Schema()).code(),
            absl::StatusCode::kFailedPrecondition);

  const absl::Status none = VerifyCdcTable("t", nlohmann::json::object(), same, Schema());
  EXPECT_EQ(none.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(none.message()), HasSubstr("ADD PRIMARY KEY (ID, Region)"));

  const nlohmann::json other_column = {
      {"tableConstraints", {{"primaryKey", {{"columns", {"shard"}}}}}}};
  EXPECT_THAT(std::string(VerifyCdcTable("t", other_column, undeclared, Schema()).message()),
              HasSubstr("'shard'"));
  EXPECT_EQ(PrimaryKeyOf(nlohmann::json::array()), std::vector<std::string>{});
  EXPECT_EQ(PrimaryKeyOf({{"tableConstraints", {{"primaryKey", 3}}}}), std::vector<std::string>{});
}

}  // namespace
}  // namespace gcpstream::bigquery
