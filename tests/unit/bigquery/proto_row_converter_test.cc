// The protobuf-message serializer: the table schema derived from a descriptor, the row each
// message becomes, and what derivation and conversion refuse. The mapping follows the
// connector's "Protobuf messages", "JSON columns" and "Geography columns" contract
// (docs/bigquery.md); the wire values follow the Storage Write API's "Supported protocol buffer
// data types"; protobuf's own rules are from "Protocol Buffers Well-Known Types"
// (protobuf.dev/reference/protobuf/google.protobuf) and the field presence guide
// (protobuf.dev/programming-guides/field_presence).
#include "gcpstream/bigquery/schema/proto_row_converter.h"

#include <gmock/gmock.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/empty.pb.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "gcpstream/bigquery/sink/bigquery_serialization_schema.h"
#include "tests/protos/bigquery_rows.pb.h"
#include "tests/protos/bigquery_rows_proto2.pb.h"

namespace gcpstream::bigquery {
namespace {

using ::testing::HasSubstr;
namespace pb = ::google::protobuf;
namespace bq = ::gcpstream::test::bq;

// "name TYPE MODE" per column, RECORDs as {…}, joined by "; ".
std::string Shape(const std::vector<TableFieldSchema>& fields) {
  std::string out;
  for (const auto& f : fields) {
    if (!out.empty()) out += "; ";
    out += f.name + " " + std::string(FieldTypeName(f.type)) + " " +
           std::string(FieldModeName(f.mode));
    if (!f.fields.empty()) out += " {" + Shape(f.fields) + "}";
  }
  return out;
}

std::string ShapeOf(const pb::Descriptor* d, ProtoSchemaOptions options = {}) {
  auto c = ProtoRowConverter::Create(d, std::move(options));
  if (!c.ok()) return "error: " + c.status().ToString();
  return Shape((*c)->schema().fields);
}

// The row bytes read back through the writer descriptor, as JSON with declared field names
// (64-bit integers as strings, bytes as base64: protobuf's JSON mapping).
nlohmann::json Decode(const ProtoRowConverter& c, const std::string& bytes) {
  auto type = WriterRowType::Create(c.schema());
  EXPECT_TRUE(type.ok()) << type.status();
  auto row = (*type)->NewRow();
  EXPECT_TRUE(row->ParseFromString(bytes));
  pb::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  std::string json;
  EXPECT_TRUE(pb::util::MessageToJsonString(*row, &json, o).ok());
  return nlohmann::json::parse(json);
}

nlohmann::json Convert(const pb::Message& m, ProtoSchemaOptions options = {}) {
  auto c = ProtoRowConverter::Create(m.GetDescriptor(), std::move(options));
  EXPECT_TRUE(c.ok()) << c.status();
  auto bytes = (*c)->encode(m);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? Decode(**c, *bytes) : nlohmann::json();
}

absl::Status ConvertError(const pb::Message& m, ProtoSchemaOptions options = {}) {
  auto c = ProtoRowConverter::Create(m.GetDescriptor(), std::move(options));
  if (!c.ok()) return c.status();
  return (*c)->encode(m).status();
}

TEST(ProtoSchemaDerivationTest, MapsEveryScalarAndNestingToItsBigQueryTypeAllNullableByDefault) {
  EXPECT_EQ(ShapeOf(bq::Scalars::descriptor()),
            "i32 INT64 NULLABLE; s32 INT64 NULLABLE; sf32 INT64 NULLABLE; i64 INT64 NULLABLE; "
            "s64 INT64 NULLABLE; sf64 INT64 NULLABLE; u32 INT64 NULLABLE; f32 INT64 NULLABLE; "
            "u64 INT64 NULLABLE; f64 INT64 NULLABLE; fl FLOAT64 NULLABLE; db FLOAT64 NULLABLE; "
            "flag BOOL NULLABLE; text STRING NULLABLE; blob BYTES NULLABLE; "
            "color STRING NULLABLE; opt INT64 NULLABLE; a STRING NULLABLE; b INT64 NULLABLE; "
            "many INT64 REPEATED; "
            "inner RECORD NULLABLE {name STRING NULLABLE; count INT64 NULLABLE}; "
            "inners RECORD REPEATED {name STRING NULLABLE; count INT64 NULLABLE}; "
            "counts RECORD REPEATED {key STRING NULLABLE; value INT64 NULLABLE}; "
            "by_name RECORD REPEATED {key STRING NULLABLE; value RECORD NULLABLE "
            "{name STRING NULLABLE; count INT64 NULLABLE}}");
}

// Nullability table: a field without presence is REQUIRED, one with presence (optional, oneof,
// message) NULLABLE; a proto3 map entry's scalar key and value have no presence, a
// message-valued one does.
TEST(ProtoSchemaDerivationTest, DeriveRequiredColumnsFollowsProto3Presence) {
  ProtoSchemaOptions o;
  o.derive_required_columns();
  EXPECT_EQ(ShapeOf(bq::Scalars::descriptor(), o),
            "i32 INT64 REQUIRED; s32 INT64 REQUIRED; sf32 INT64 REQUIRED; i64 INT64 REQUIRED; "
            "s64 INT64 REQUIRED; sf64 INT64 REQUIRED; u32 INT64 REQUIRED; f32 INT64 REQUIRED; "
            "u64 INT64 REQUIRED; f64 INT64 REQUIRED; fl FLOAT64 REQUIRED; db FLOAT64 REQUIRED; "
            "flag BOOL REQUIRED; text STRING REQUIRED; blob BYTES REQUIRED; "
            "color STRING REQUIRED; opt INT64 NULLABLE; a STRING NULLABLE; b INT64 NULLABLE; "
            "many INT64 REPEATED; "
            "inner RECORD NULLABLE {name STRING REQUIRED; count INT64 REQUIRED}; "
            "inners RECORD REPEATED {name STRING REQUIRED; count INT64 REQUIRED}; "
            "counts RECORD REPEATED {key STRING REQUIRED; value INT64 REQUIRED}; "
            "by_name RECORD REPEATED {key STRING REQUIRED; value RECORD NULLABLE "
            "{name STRING REQUIRED; count INT64 REQUIRED}}");
}

// proto2: `required` is REQUIRED (a required wrapper too); optional fields and map entries have
// explicit presence and stay NULLABLE.
TEST(ProtoSchemaDerivationTest, DeriveRequiredColumnsFollowsProto2Labels) {
  ProtoSchemaOptions o;
  o.derive_required_columns();
  EXPECT_EQ(ShapeOf(gcpstream::test::bq2::Legacy::descriptor(), o),
            "id INT64 REQUIRED; note STRING NULLABLE; wrapped INT64 REQUIRED; "
            "counts RECORD REPEATED {key STRING NULLABLE; value INT64 NULLABLE}; "
            "plain INT64 NULLABLE; tags STRING REPEATED");
  EXPECT_EQ(ShapeOf(gcpstream::test::bq2::Legacy::descriptor()),
            "id INT64 NULLABLE; note STRING NULLABLE; wrapped INT64 NULLABLE; "
            "counts RECORD REPEATED {key STRING NULLABLE; value INT64 NULLABLE}; "
            "plain INT64 NULLABLE; tags STRING REPEATED");
}

TEST(ProtoSchemaDerivationTest, WellKnownTypesMapToTheirScalarsAndStructsToJson) {
  ProtoSchemaOptions o;
  o.derive_required_columns();  // wrappers and the rest stay NULLABLE: they are messages
  EXPECT_EQ(ShapeOf(bq::WellKnown::descriptor(), o),
            "ts TIMESTAMP NULLABLE; dur INT64 NULLABLE; mask STRING NULLABLE; "
            "i32v INT64 NULLABLE; u32v INT64 NULLABLE; i64v INT64 NULLABLE; "
            "u64v INT64 NULLABLE; fv FLOAT64 NULLABLE; dv FLOAT64 NULLABLE; bv BOOL NULLABLE; "
            "sv STRING NULLABLE; byv BYTES NULLABLE; st JSON NULLABLE; val JSON NULLABLE; "
            "lv JSON NULLABLE; any RECORD NULLABLE {type_url STRING REQUIRED; value BYTES "
            "REQUIRED}; sts JSON REPEATED; tss TIMESTAMP REPEATED; i64vs INT64 REPEATED");
}

TEST(ProtoRowConversionTest, WritesEveryScalarOnItsWireType) {
  bq::Scalars m;
  m.set_i32(-7);
  m.set_s32(-8);
  m.set_sf32(9);
  m.set_i64(std::numeric_limits<std::int64_t>::min());
  m.set_u32(4'000'000'000u);  // widened, not wrapped negative
  m.set_f32(4'294'967'295u);
  m.set_u64(static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
  m.set_fl(1.5f);
  m.set_db(-0.25);
  m.set_flag(true);
  m.set_text("héllo");
  m.set_blob(std::string("\x00\xff", 2));
  m.set_color(bq::GREEN);
  m.set_b(42);
  m.add_many(1);
  m.add_many(2);
  m.mutable_inner()->set_name("in");
  m.add_inners()->set_count(3);
  (*m.mutable_counts())["k"] = 5;
  (*m.mutable_by_name())["x"].set_name("n");
  nlohmann::json row = Convert(m);
  EXPECT_EQ(row["i32"], "-7");
  EXPECT_EQ(row["s32"], "-8");
  EXPECT_EQ(row["sf32"], "9");
  EXPECT_EQ(row["i64"], "-9223372036854775808");
  EXPECT_EQ(row["u32"], "4000000000");
  EXPECT_EQ(row["f32"], "4294967295");
  EXPECT_EQ(row["u64"], "9223372036854775807");
  EXPECT_EQ(row["fl"], 1.5);
  EXPECT_EQ(row["db"], -0.25);
  EXPECT_EQ(row["flag"], true);
  EXPECT_EQ(row["text"], "héllo");
  EXPECT_EQ(row["blob"], "AP8=");
  EXPECT_EQ(row["color"], "GREEN");
  // A plain proto3 scalar has no "unset": it reaches the column as its default.
  EXPECT_EQ(row["s64"], "0");
  // Fields with presence that are unset stay NULL.
  EXPECT_FALSE(row.contains("opt"));
  EXPECT_FALSE(row.contains("a"));
  EXPECT_EQ(row["b"], "42");
  EXPECT_EQ(row["many"], nlohmann::json::parse(R"(["1","2"])"));
  EXPECT_EQ(row["inner"], nlohmann::json::parse(R"({"name":"in","count":"0"})"));
  EXPECT_EQ(row["inners"], nlohmann::json::parse(R"([{"name":"","count":"3"}])"));
  EXPECT_EQ(row["counts"], nlohmann::json::parse(R"([{"key":"k","value":"5"}])"));
  EXPECT_EQ(row["by_name"],
            nlohmann::json::parse(R"([{"key":"x","value":{"name":"n","count":"0"}}])"));
}

TEST(ProtoRowConversionTest, AnUnknownEnumNumberIsWrittenAsProtobufsPlaceholderName) {
  bq::Scalars m;
  m.set_color(static_cast<bq::Color>(9));
  EXPECT_THAT(Convert(m)["color"].get<std::string>(), HasSubstr("9"));
}

TEST(ProtoRowConversionTest, Uint64AboveInt64MaxFailsTheRowNamingTheField) {
  bq::Scalars m;
  m.set_f64(static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1);
  absl::Status s = ConvertError(m);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"f64\""));
  EXPECT_THAT(s.message(), HasSubstr("9223372036854775808"));

  bq::WellKnown w;
  w.mutable_u64v()->set_value(std::numeric_limits<std::uint64_t>::max());
  EXPECT_THAT(ConvertError(w).message(), HasSubstr("\"u64v\""));
}

TEST(ProtoRowConversionTest, WritesWellKnownTypesAsTheirValues) {
  bq::WellKnown m;
  m.mutable_ts()->set_seconds(1'700'000'000);
  m.mutable_ts()->set_nanos(123'456'789);  // finer than µs: truncated
  m.mutable_dur()->set_seconds(-1);
  m.mutable_dur()->set_nanos(-500'000'999);  // toward zero
  m.mutable_mask()->add_paths("a.b");
  m.mutable_mask()->add_paths("snake_case");  // as declared, not lowerCamelCase
  m.mutable_i32v()->set_value(-3);
  m.mutable_u32v()->set_value(4'000'000'000u);
  m.mutable_i64v()->set_value(0);  // set to 0 is 0, not NULL
  m.mutable_dv()->set_value(2.5);
  m.mutable_bv()->set_value(false);
  m.mutable_sv()->set_value("s");
  m.mutable_byv()->set_value("b");
  (*m.mutable_st()->mutable_fields())["k"].set_string_value("v");
  m.mutable_val()->set_null_value(pb::NULL_VALUE);
  m.mutable_lv()->add_values()->set_number_value(1);
  m.mutable_any()->set_type_url("type.googleapis.com/x.Y");
  m.mutable_any()->set_value("raw");
  (*m.add_sts()->mutable_fields())["n"].set_bool_value(true);
  m.add_tss()->set_seconds(1);
  m.add_i64vs()->set_value(7);
  nlohmann::json row = Convert(m);
  EXPECT_EQ(row["ts"], "1700000000123456");
  EXPECT_EQ(row["dur"], "-1500000");
  EXPECT_EQ(row["mask"], "a.b,snake_case");
  EXPECT_EQ(row["i32v"], "-3");
  EXPECT_EQ(row["u32v"], "4000000000");
  EXPECT_EQ(row["i64v"], "0");
  EXPECT_FALSE(row.contains("u64v"));  // an unset wrapper is NULL
  EXPECT_FALSE(row.contains("fv"));
  EXPECT_EQ(row["dv"], 2.5);
  EXPECT_EQ(row["bv"], false);
  EXPECT_EQ(row["sv"], "s");
  EXPECT_EQ(row["byv"], "Yg==");
  EXPECT_EQ(nlohmann::json::parse(row["st"].get<std::string>()), nlohmann::json({{"k", "v"}}));
  EXPECT_EQ(row["val"], "null");  // the JSON literal, not an unset column
  EXPECT_EQ(nlohmann::json::parse(row["lv"].get<std::string>()), nlohmann::json::array({1}));
  EXPECT_EQ(row["any"],
            nlohmann::json::parse(R"({"type_url":"type.googleapis.com/x.Y","value":"cmF3"})"));
  EXPECT_EQ(nlohmann::json::parse(row["sts"][0].get<std::string>()), nlohmann::json({{"n", true}}));
  EXPECT_EQ(row["tss"], nlohmann::json::array({"1000000"}));
  EXPECT_EQ(row["i64vs"], nlohmann::json::array({"7"}));
}

TEST(ProtoRowConversionTest, ADurationOrTimestampOutOfRangeFailsTheRow) {
  bq::WellKnown m;
  m.mutable_dur()->set_seconds(315'576'000'001);
  EXPECT_THAT(ConvertError(m).message(), HasSubstr("\"dur\""));
  m.mutable_dur()->set_seconds(1);
  m.mutable_dur()->set_nanos(-1);  // signs disagree
  EXPECT_THAT(ConvertError(m).message(), HasSubstr("valid range"));
  m.clear_dur();
  m.mutable_ts()->set_seconds(253'402'300'800);  // 10000-01-01
  absl::Status s = ConvertError(m);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"ts\""));
  m.mutable_ts()->set_seconds(0);
  m.mutable_ts()->set_nanos(-1);
  EXPECT_THAT(ConvertError(m).message(), HasSubstr("nanos"));
}

TEST(ProtoRowConversionTest, AnUnsetProto2RequiredFieldFailsTheRowOnlyWhenTheColumnIsRequired) {
  gcpstream::test::bq2::Legacy m;  // partially built: id and wrapped unset
  m.set_note("n");
  ProtoSchemaOptions o;
  o.derive_required_columns();
  absl::Status s = ConvertError(m, o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"id\""));
  // NULLABLE columns: the unset fields are NULL.
  nlohmann::json row = Convert(m);
  EXPECT_FALSE(row.contains("id"));
  EXPECT_EQ(row["note"], "n");
}

TEST(ProtoRowConversionTest, InvalidUtf8InAProto2StringFailsTheRow) {
  gcpstream::test::bq2::Legacy m;  // proto2 does not check UTF-8 itself
  m.set_note("ok\xff");
  absl::Status s = ConvertError(m);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("UTF-8"));
}

// A generated extension's descriptor, as a C++ program finds it.
const pb::FieldDescriptor* Extension(const std::string& name) {
  return pb::DescriptorPool::generated_pool()->FindExtensionByName("gcpstream.test.bq." + name);
}

ProtoSchemaOptions MarkedOptions() {
  ProtoSchemaOptions o;
  o.json_field_option(Extension("json"))
      .geography_field_option(Extension("geography"))
      .json_field_path("doc")
      .json_field_path("wrapped");
  return o;
}

TEST(ProtoMarkedColumnsTest, MarkedFieldsBecomeJsonAndGeographyColumnsNeverRequired) {
  ProtoSchemaOptions o = MarkedOptions();
  o.derive_required_columns();
  EXPECT_EQ(ShapeOf(bq::Marked::descriptor(), o),
            "payload JSON NULLABLE; shape GEOGRAPHY NULLABLE; opt_payload JSON NULLABLE; "
            "doc JSON NULLABLE; plain STRING REQUIRED; shapes GEOGRAPHY REPEATED; "
            "wrapped JSON NULLABLE; off STRING REQUIRED");
}

TEST(ProtoMarkedColumnsTest, MarkedValuesAreVerbatimOrCanonicalJsonAndEmptyWithoutPresenceIsNull) {
  bq::Marked m;
  m.set_shape("POINT(1 2)");
  m.set_opt_payload("");  // explicitly set: passed through as it is
  m.mutable_doc()->set_name("d");
  m.mutable_doc()->set_count(3);
  m.add_shapes("POINT(0 0)");
  m.add_shapes("");  // repeated elements are explicit
  m.mutable_wrapped()->set_value(5);
  nlohmann::json row = Convert(m, MarkedOptions());
  EXPECT_FALSE(row.contains("payload"));  // "" without presence: NULL, not invalid JSON
  EXPECT_EQ(row["shape"], "POINT(1 2)");
  EXPECT_EQ(row["opt_payload"], "");
  EXPECT_EQ(nlohmann::json::parse(row["doc"].get<std::string>()),
            nlohmann::json::parse(R"({"name":"d","count":"3"})"));
  EXPECT_EQ(row["shapes"], nlohmann::json::array({"POINT(0 0)", ""}));
  EXPECT_EQ(row["wrapped"], "\"5\"");  // the wrapper's canonical JSON, not the flattened value
}

TEST(ProtoMarkedColumnsTest, AnOptionNumberAloneMarksTheSameFields) {
  ProtoSchemaOptions o;
  o.json_field_option_number(50000).geography_field_option_number(50006);
  EXPECT_EQ(ShapeOf(bq::Marked::descriptor(), o),
            "payload JSON NULLABLE; shape GEOGRAPHY NULLABLE; opt_payload JSON NULLABLE; "
            "doc RECORD NULLABLE {name STRING NULLABLE; count INT64 NULLABLE}; "
            "plain STRING NULLABLE; shapes GEOGRAPHY REPEATED; wrapped INT64 NULLABLE; "
            "off STRING NULLABLE");
  // A number no field carries is not an error: one configuration serves many message types.
  ProtoSchemaOptions unused;
  unused.json_field_option_number(51234);
  EXPECT_EQ(ShapeOf(bq::Inner::descriptor(), unused), "name STRING NULLABLE; count INT64 NULLABLE");
}

TEST(ProtoMarkedColumnsTest, DerivationRefusesMarkingsThatCannotHold) {
  ProtoSchemaOptions by_option;
  by_option.json_field_option(Extension("json"));
  EXPECT_THAT(ShapeOf(bq::BadMark::descriptor(), by_option), HasSubstr("\"n\": is a int64"));
  EXPECT_THAT(ShapeOf(bq::MapMark::descriptor(), by_option), HasSubstr("is a map"));

  ProtoSchemaOptions geo_message;
  geo_message.geography_field_path("doc");
  EXPECT_THAT(ShapeOf(bq::Marked::descriptor(), geo_message),
              HasSubstr("only a string can be a GEOGRAPHY column"));
  ProtoSchemaOptions geo_struct;
  geo_struct.geography_field_path("st");
  EXPECT_THAT(ShapeOf(bq::WellKnown::descriptor(), geo_struct),
              HasSubstr("google.protobuf.Struct"));

  ProtoSchemaOptions both;
  both.json_field_path("plain").geography_field_path("plain");
  EXPECT_THAT(ShapeOf(bq::Marked::descriptor(), both),
              HasSubstr("both as a JSON and as a GEOGRAPHY"));

  ProtoSchemaOptions typo;
  typo.json_field_path("doc.nmae");
  EXPECT_THAT(ShapeOf(bq::Marked::descriptor(), typo), HasSubstr("\"doc.nmae\" matches no field"));

  ProtoSchemaOptions string_option;
  string_option.json_field_option_number(50010);
  EXPECT_THAT(ShapeOf(bq::LabelOption::descriptor(), string_option),
              HasSubstr("declared as gcpstream.test.bq.label (string), not a bool"));
}

TEST(ProtoMarkedColumnsTest, OptionsThemselvesAreValidated) {
  ProtoSchemaOptions twice;
  twice.json_field_option_number(50000).geography_field_option_number(50000);
  EXPECT_THAT(twice.validate().message(), HasSubstr("both as a JSON and as a GEOGRAPHY"));
  ProtoSchemaOptions not_bool;
  not_bool.json_field_option(Extension("label"));
  EXPECT_THAT(not_bool.validate().message(), HasSubstr("must be a singular bool"));
  ProtoSchemaOptions not_an_option;
  not_an_option.json_field_option(bq::Inner::descriptor()->field(0));
  EXPECT_THAT(not_an_option.validate().message(), HasSubstr("not an extension"));
  ProtoSchemaOptions number;
  number.geography_field_option_number(0);
  EXPECT_THAT(number.validate().message(), HasSubstr("outside protobuf's field numbers"));
  ProtoSchemaOptions path;
  path.json_field_path("a..b");
  EXPECT_THAT(path.validate().message(), HasSubstr("empty segment"));
}

TEST(ProtoSchemaDerivationTest, RefusesWhatABigQuerySchemaCannotHold) {
  EXPECT_THAT(ShapeOf(bq::Recursive::descriptor()), HasSubstr("recursive"));
  EXPECT_THAT(ShapeOf(bq::HoldsEmpty::descriptor()), HasSubstr("\"nothing\": message "
                                                               "gcpstream.test.bq.Empty has no "
                                                               "fields"));
  EXPECT_THAT(ShapeOf(pb::Empty::descriptor()), HasSubstr("has no fields"));
}

// Descriptors built at run time, the way a schema registry hands them over.
class DynamicDescriptorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pb::FileDescriptorProto descriptor_file;
    pb::FieldOptions::descriptor()->file()->CopyTo(&descriptor_file);
    ASSERT_NE(pool_.BuildFile(descriptor_file), nullptr);
  }

  // A one-message proto3 file "dyn.Row" with string fields; `options` sets wire bytes on the
  // options of field i.
  const pb::Descriptor* Build(const std::string& text,
                              const std::function<void(pb::FileDescriptorProto&)>& edit = {}) {
    pb::FileDescriptorProto file;
    EXPECT_TRUE(pb::TextFormat::ParseFromString(text, &file));
    if (edit) edit(file);
    const pb::FileDescriptor* built = pool_.BuildFile(file);
    EXPECT_NE(built, nullptr);
    return built == nullptr ? nullptr : built->message_type(0);
  }

  static void SetUnknownOption(pb::FieldDescriptorProto& field, int number, std::uint64_t v) {
    pb::FieldOptions* o = field.mutable_options();
    o->GetReflection()->MutableUnknownFields(o)->AddVarint(number, v);
  }

  pb::DescriptorPool pool_;
  pb::DynamicMessageFactory factory_{&pool_};
};

// An option number no linked generated extension claims (50000 is gcpstream.test.bq.json, which
// protobuf would resolve and normalize while building the pool), so it stays wire bytes.
constexpr int kUnlinkedNumber = 50100;

constexpr char kRowFile[] = R"pb(
  name: "dyn.proto"
  package: "dyn"
  syntax: "proto3"
  message_type {
    name: "Row"
    field { name: "payload" number: 1 type: TYPE_STRING label: LABEL_OPTIONAL }
    field { name: "n" number: 2 type: TYPE_INT64 label: LABEL_OPTIONAL }
  })pb";

TEST_F(DynamicDescriptorTest, AnOptionKnownOnlyAsWireBytesMarksTheFieldWhenItIsASingularBool) {
  const pb::Descriptor* d = Build(kRowFile, [](pb::FileDescriptorProto& f) {
    SetUnknownOption(*f.mutable_message_type(0)->mutable_field(0), kUnlinkedNumber, 1);
  });
  ASSERT_NE(d, nullptr);
  ProtoSchemaOptions o;
  o.json_field_option_number(kUnlinkedNumber);
  auto c = ProtoRowConverter::Create(d, o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Shape((*c)->schema().fields), "payload JSON NULLABLE; n INT64 NULLABLE");

  // A DynamicMessage of that type converts like a generated one.
  std::unique_ptr<pb::Message> m(factory_.GetPrototype(d)->New());
  m->GetReflection()->SetString(m.get(), d->field(0), R"({"a":1})");
  m->GetReflection()->SetInt64(m.get(), d->field(1), 9);
  auto bytes = (*c)->encode(*m);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(Decode(**c, *bytes), nlohmann::json::parse(R"({"payload":"{\"a\":1}","n":"9"})"));
}

TEST_F(DynamicDescriptorTest, AnOptionNumberNotEncodedAsABoolIsRefused) {
  const pb::Descriptor* d = Build(kRowFile, [](pb::FileDescriptorProto& f) {
    SetUnknownOption(*f.mutable_message_type(0)->mutable_field(0), kUnlinkedNumber, 2);
  });
  ProtoSchemaOptions o;
  o.json_field_option_number(kUnlinkedNumber);
  EXPECT_THAT(ShapeOf(d, o), HasSubstr("not encoded as a singular bool"));
}

// The extension's name tells an unrelated declaration at the same number apart.
TEST_F(DynamicDescriptorTest, ANamedMarkerIgnoresAnotherDeclarationAtItsNumber) {
  Build(R"pb(
    name: "other.proto"
    package: "other"
    syntax: "proto2"
    dependency: "google/protobuf/descriptor.proto"
    extension {
      name: "flag"
      number: 50000
      type: TYPE_BOOL
      label: LABEL_OPTIONAL
      extendee: ".google.protobuf.FieldOptions"
    })pb");
  const pb::Descriptor* d = Build(kRowFile, [](pb::FileDescriptorProto& f) {
    f.add_dependency("other.proto");
    SetUnknownOption(*f.mutable_message_type(0)->mutable_field(0), 50000, 1);
  });
  ASSERT_NE(d, nullptr);
  ProtoSchemaOptions named;
  named.json_field_option(Extension("json"));  // gcpstream.test.bq.json, not other.flag
  EXPECT_EQ(ShapeOf(d, named), "payload STRING NULLABLE; n INT64 NULLABLE");
  ProtoSchemaOptions by_number;
  by_number.json_field_option_number(50000);
  EXPECT_EQ(ShapeOf(d, by_number), "payload JSON NULLABLE; n INT64 NULLABLE");
}

// Generated C++ cannot even hold these two fields; a descriptor from elsewhere can.
TEST_F(DynamicDescriptorTest, SiblingNamesThatDifferOnlyByCaseAreRefused) {
  const pb::Descriptor* d = Build(R"pb(
    name: "clash.proto"
    package: "clash"
    syntax: "proto2"
    message_type {
      name: "Row"
      field { name: "name" number: 1 type: TYPE_STRING label: LABEL_OPTIONAL }
      field { name: "Name" number: 2 type: TYPE_STRING label: LABEL_OPTIONAL }
    })pb");
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(ShapeOf(d), HasSubstr("\"name\" and \"Name\" of clash.Row differ only by case"));
}

TEST_F(DynamicDescriptorTest, NestingDeeperThanBigQueryAllowsIsRefusedAtDerivation) {
  std::string text = R"pb(name: "deep.proto" package: "deep" syntax: "proto3")pb";
  for (int i = 0; i < 17; ++i) {
    text += "message_type { name: \"L" + std::to_string(i) + "\" field { name: \"v\" number: 1 " +
            "type: TYPE_INT64 label: LABEL_OPTIONAL } ";
    if (i < 16) {
      text +=
          "field { name: \"next\" number: 2 type: TYPE_MESSAGE label: LABEL_OPTIONAL "
          "type_name: \".deep.L" +
          std::to_string(i + 1) + "\" } ";
    }
    text += "} ";
  }
  const pb::Descriptor* d = Build(text);
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(ShapeOf(d), HasSubstr("nests RECORDs deeper than BigQuery's 15 levels"));
}

// Found by feeding the converter hostile descriptors: what used to crash, hang or pass wrong
// data silently.
TEST_F(DynamicDescriptorTest, ALookAlikeOfAWellKnownTypeIsRefusedNotReadByItsLayout) {
  Build(R"pb(
    name: "fake_timestamp.proto"
    package: "google.protobuf"
    syntax: "proto3"
    message_type {
      name: "Timestamp"
      field { name: "seconds" number: 1 type: TYPE_STRING label: LABEL_OPTIONAL }
    })pb");
  const pb::Descriptor* d = Build(R"pb(
    name: "uses.proto"
    package: "uses"
    syntax: "proto3"
    dependency: "fake_timestamp.proto"
    message_type {
      name: "Row"
      field {
        name: "at"
        number: 1
        type: TYPE_MESSAGE
        label: LABEL_OPTIONAL
        type_name: ".google.protobuf.Timestamp"
      }
    })pb");
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(ShapeOf(d), HasSubstr("not protobuf's own definition"));
}

// One message type per level, each with `width` fields of the next: no recursion, but the
// schema doubles (or worse) at every level.
std::string Fanout(int levels, int width) {
  std::string text = R"pb(name: "fan.proto" package: "fan" syntax: "proto3")pb";
  for (int i = 0; i < levels; ++i) {
    text += "message_type { name: \"L" + std::to_string(i) + "\" ";
    for (int w = 0; w < width; ++w) {
      text +=
          "field { name: \"f" + std::to_string(w) + "\" number: " + std::to_string(w + 1) +
          (i + 1 < levels ? " type: TYPE_MESSAGE type_name: \".fan.L" + std::to_string(i + 1) + "\""
                          : " type: TYPE_INT64") +
          " label: LABEL_OPTIONAL } ";
    }
    text += "} ";
  }
  return text;
}

TEST_F(DynamicDescriptorTest, ADeepChainOrAWideFanOutFailsWhileDerivingNotAfter) {
  const pb::Descriptor* deep = Build(Fanout(2000, 1));
  ASSERT_NE(deep, nullptr);
  EXPECT_THAT(ShapeOf(deep), HasSubstr("deeper than BigQuery's 15 levels"));
  pb::DescriptorPool other;
  pb::FileDescriptorProto file;
  ASSERT_TRUE(pb::TextFormat::ParseFromString(Fanout(8, 10), &file));  // 10^8 columns
  const pb::FileDescriptor* wide = other.BuildFile(file);
  ASSERT_NE(wide, nullptr);
  EXPECT_THAT(ShapeOf(wide->message_type(0)), HasSubstr("more than BigQuery's 10000 columns"));
}

TEST(ProtoRowConversionTest, JsonColumnsRefuseWhatTheJsonPrinterWouldMangle) {
  bq::WellKnown m;
  (*m.mutable_st()->mutable_fields())["k"].set_string_value("ab\xff");
  EXPECT_THAT(ConvertError(m).message(), HasSubstr("invalid UTF-8"));
  m.Clear();
  m.mutable_val();  // set, but no kind
  EXPECT_THAT(ConvertError(m).message(), HasSubstr("no kind"));
  m.Clear();
  m.mutable_lv()->add_values()->set_number_value(std::nan(""));
  EXPECT_THAT(ConvertError(m).message(), HasSubstr("NaN"));
}

TEST(ProtoSchemaDerivationTest, APathInsideAFieldWrittenWholeSaysSo) {
  ProtoSchemaOptions o;
  o.json_field_path("doc").json_field_path("doc.name");
  EXPECT_THAT(ShapeOf(bq::Marked::descriptor(), o),
              HasSubstr("\"doc.name\" names a field inside \"doc\", which is written whole"));
  ProtoSchemaOptions wkt;
  wkt.json_field_path("ts.seconds");
  EXPECT_THAT(ShapeOf(bq::WellKnown::descriptor(), wkt),
              HasSubstr("the well-known type google.protobuf.Timestamp"));
}

TEST(ProtoRowConversionTest, AnotherDefinitionUnderTheSameNameIsRefused) {
  auto c = ProtoRowConverter::Create(bq::Inner::descriptor());
  ASSERT_TRUE(c.ok()) << c.status();
  pb::DescriptorPool pool;
  pb::FileDescriptorProto file;
  ASSERT_TRUE(pb::TextFormat::ParseFromString(
      R"pb(
        name: "inner_other.proto"
        package: "gcpstream.test.bq"
        syntax: "proto3"
        message_type {
          name: "Inner"
          field { name: "name" number: 1 type: TYPE_INT64 label: LABEL_OPTIONAL }
        })pb",
      &file));
  const pb::FileDescriptor* built = pool.BuildFile(file);
  ASSERT_NE(built, nullptr);
  pb::DynamicMessageFactory factory(&pool);
  std::unique_ptr<pb::Message> m(factory.GetPrototype(built->message_type(0))->New());
  m->GetReflection()->SetInt64(m.get(), built->message_type(0)->field(0), 42);
  EXPECT_THAT((*c)->encode(*m).status().message(), HasSubstr("definition of that type differs"));
}

TEST(ProtoRowConversionTest, AMessageOfAnotherTypeIsRefusedAndOneFromAnotherPoolIsReRead) {
  auto c = ProtoRowConverter::Create(bq::Inner::descriptor());
  ASSERT_TRUE(c.ok()) << c.status();
  bq::Scalars other;
  EXPECT_THAT((*c)->encode(other).status().message(),
              HasSubstr("expected a gcpstream.test.bq.Inner"));

  // The same type, built into a pool of its own.
  pb::DescriptorPool pool;
  pb::FileDescriptorProto file;
  file.set_name("inner_copy.proto");
  file.set_package("gcpstream.test.bq");
  file.set_syntax("proto3");
  bq::Inner::descriptor()->CopyTo(file.add_message_type());
  const pb::FileDescriptor* built = pool.BuildFile(file);
  ASSERT_NE(built, nullptr);
  pb::DynamicMessageFactory factory(&pool);
  std::unique_ptr<pb::Message> m(factory.GetPrototype(built->message_type(0))->New());
  m->GetReflection()->SetString(m.get(), built->message_type(0)->field(0), "copy");
  auto bytes = (*c)->encode(*m);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(Decode(**c, *bytes)["name"], "copy");
}

TEST(ProtoSerializationSchemaTest, ProtoMessageAndProtoFeedTheConverter) {
  auto direct = BigQuerySerializationSchema<bq::Inner>::proto_message();
  ASSERT_TRUE(direct.ok()) << direct.status();
  EXPECT_EQ(Shape(direct->schema().fields), "name STRING NULLABLE; count INT64 NULLABLE");
  EXPECT_EQ(direct->writer_descriptor().field_size(), 2);
  bq::Inner in;
  in.set_count(4);
  SinkWriterContext ctx;
  auto row = direct->serialize(in, ctx);
  ASSERT_TRUE(row.ok()) << row.status();
  ASSERT_TRUE(row->has_value());

  // From any record type: a null message skips the record.
  auto mapped = BigQuerySerializationSchema<int>::proto(
      bq::Inner::descriptor(), {},
      [](const int& n) -> absl::StatusOr<std::unique_ptr<pb::Message>> {
        if (n < 0) return std::unique_ptr<pb::Message>();
        auto m = std::make_unique<bq::Inner>();
        m->set_count(n);
        return m;
      });
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  auto kept = mapped->serialize(4, ctx);
  ASSERT_TRUE(kept.ok() && kept->has_value());
  EXPECT_EQ((*kept)->bytes, (*row)->bytes);
  auto skipped = mapped->serialize(-1, ctx);
  ASSERT_TRUE(skipped.ok());
  EXPECT_FALSE(skipped->has_value());

  auto refused = BigQuerySerializationSchema<bq::Recursive>::proto_message();
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gcpstream::bigquery
