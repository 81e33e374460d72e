// The Spanner value model against the wire encoding the Spanner API reference documents for
// each TypeCode (google.spanner.v1.TypeCode: INT64 as a decimal string, FLOAT64 NaN/Infinity
// as strings, BYTES as base64, TIMESTAMP as RFC 3339 "Zulu", DATE as "YYYY-MM-DD", NUMERIC as a
// decimal string, PG_NUMERIC/PG_JSONB annotations for PostgreSQL) and the type ranges of the
// Spanner data types reference.
#include "gcpstream/spanner/client/value.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace gcpstream::spanner {
namespace {

namespace sp = google::spanner::v1;
using google::protobuf::Value;

// Encodes, then decodes what travelled, checking both the wire text and the round trip.
spanner::Value RoundTrip(const spanner::Value& v) {
  auto back = spanner::Value::FromProto(v.type(), v.proto());
  EXPECT_TRUE(back.ok()) << back.status();
  return back.ok() ? *back : v;
}

TEST(SpannerValueTest, Int64TravelsAsADecimalStringAtBothEndsOfItsRange) {
  for (std::int64_t i : {std::numeric_limits<std::int64_t>::min(), std::int64_t{-1},
                         std::int64_t{0}, std::numeric_limits<std::int64_t>::max()}) {
    auto v = spanner::Value::Int64(i);
    EXPECT_EQ(v.proto().string_value(), std::to_string(i));
    EXPECT_EQ(*RoundTrip(v).as_int64(), i);
  }
  Value wire;
  wire.set_string_value("9223372036854775808");  // one past the maximum
  EXPECT_EQ(spanner::Value::FromProto(MakeType(sp::INT64), wire).status().code(),
            absl::StatusCode::kInvalidArgument);
  wire.set_number_value(5);  // a number is not how INT64 travels
  EXPECT_EQ(spanner::Value::FromProto(MakeType(sp::INT64), wire).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SpannerValueTest, FloatsKeepNaNAndInfinitiesAsTheDocumentedStrings) {
  auto nan = spanner::Value::Float64(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(nan.proto().string_value(), "NaN");
  EXPECT_TRUE(std::isnan(*RoundTrip(nan).as_float64()));
  EXPECT_EQ(spanner::Value::Float64(INFINITY).proto().string_value(), "Infinity");
  EXPECT_EQ(spanner::Value::Float64(-INFINITY).proto().string_value(), "-Infinity");
  EXPECT_EQ(*RoundTrip(spanner::Value::Float64(-INFINITY)).as_float64(), -INFINITY);
  const double max = std::numeric_limits<double>::max();
  EXPECT_EQ(*RoundTrip(spanner::Value::Float64(max)).as_float64(), max);
  EXPECT_EQ(
      *RoundTrip(spanner::Value::Float64(std::numeric_limits<double>::denorm_min())).as_float64(),
      std::numeric_limits<double>::denorm_min());
  auto f32 = spanner::Value::Float32(std::numeric_limits<float>::max());
  EXPECT_EQ(f32.type().code(), sp::FLOAT32);
  EXPECT_EQ(*RoundTrip(f32).as_float64(), std::numeric_limits<float>::max());
  Value too_big;
  too_big.set_number_value(1e300);
  EXPECT_EQ(spanner::Value::FromProto(MakeType(sp::FLOAT32), too_big).status().code(),
            absl::StatusCode::kInvalidArgument);
  Value word;
  word.set_string_value("nan");  // the spelling is exact
  EXPECT_FALSE(spanner::Value::FromProto(MakeType(sp::FLOAT64), word).ok());
}

TEST(SpannerValueTest, GoogleSqlNumericHoldsPrecision38Scale9AndRoundsNothing) {
  const std::string widest = "-" + std::string(29, '9') + "." + std::string(9, '9');
  auto v = spanner::Value::Numeric(widest);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->proto().string_value(), widest);
  EXPECT_EQ(*RoundTrip(*v).as_string(), widest);
  EXPECT_EQ(spanner::Value::Numeric("+1.5")->proto().string_value(), "1.5");
  EXPECT_EQ(spanner::Value::Numeric("0000000000000000000000000000001")->proto().string_value(),
            "0000000000000000000000000000001")
      << "leading zeros are not significant digits";
  auto too_wide = spanner::Value::Numeric(std::string(30, '1'));
  EXPECT_EQ(too_wide.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(too_wide.status().message().find("at most 29"), std::string::npos) << too_wide.status();
  auto too_fine = spanner::Value::Numeric("0.1234567891");
  EXPECT_NE(too_fine.status().message().find("at most 9"), std::string::npos) << too_fine.status();
  for (const char* bad : {"", "-", ".", "1e5", "1.2.3", "NaN", " 1", "0x10"}) {
    EXPECT_EQ(spanner::Value::Numeric(bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(SpannerValueTest, PostgreSqlNumericCarriesItsAnnotationNaNAndWideValues) {
  auto nan = spanner::Value::PgNumeric("nan");
  ASSERT_TRUE(nan.ok()) << nan.status();
  EXPECT_EQ(nan->proto().string_value(), "NaN");
  EXPECT_EQ(nan->type().type_annotation(), sp::PG_NUMERIC);
  const std::string wide = std::string(100, '7') + "." + std::string(50, '3');
  auto v = spanner::Value::PgNumeric(wide);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*RoundTrip(*v).as_string(), wide);
  EXPECT_FALSE(spanner::Value::Numeric("NaN").ok()) << "GoogleSQL NUMERIC has no NaN";
  EXPECT_FALSE(spanner::Value::PgNumeric("1." + std::string(16384, '1')).ok());
}

TEST(SpannerValueTest, StringsMustBeUtf8AndTheErrorNamesTheByte) {
  auto bad = spanner::Value::String(std::string("ab\xff", 3));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("byte 2"), std::string::npos) << bad.status();
  EXPECT_EQ(*RoundTrip(*spanner::Value::String("Zürich ✈")).as_string(), "Zürich ✈");
}

TEST(SpannerValueTest, BytesTravelAsBase64AndComeBackByteForByte) {
  const std::string raw("\x00\x01\xfe\xff ok", 7);
  auto v = spanner::Value::Bytes(raw);
  EXPECT_EQ(v.proto().string_value(), "AAH+/yBvaw==");
  EXPECT_EQ(*RoundTrip(v).as_bytes(), raw);
  Value wire;
  wire.set_string_value("not base64!");
  EXPECT_EQ(spanner::Value::FromProto(MakeType(sp::BYTES), wire).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SpannerValueTest, DatesCoverYearOneToYear9999AndNoImpossibleDay) {
  auto first = spanner::Value::Date(absl::CivilDay(1, 1, 1));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->proto().string_value(), "0001-01-01");
  EXPECT_EQ(*RoundTrip(*spanner::Value::Date(absl::CivilDay(9999, 12, 31))).as_date(),
            absl::CivilDay(9999, 12, 31));
  EXPECT_FALSE(spanner::Value::Date(absl::CivilDay(10000, 1, 1)).ok());
  EXPECT_FALSE(spanner::Value::Date(absl::CivilDay(0, 12, 31)).ok());
  for (const char* bad : {"2024-02-30", "2024-2-01", "20240201", "2024-02-01T00:00:00Z"}) {
    Value wire;
    wire.set_string_value(bad);
    EXPECT_FALSE(spanner::Value::FromProto(MakeType(sp::DATE), wire).ok()) << bad;
  }
}

TEST(SpannerValueTest, TimestampsKeepNanosecondsAndTheirRange) {
  const absl::Time t = absl::FromUnixSeconds(1700000000) + absl::Nanoseconds(123456789);
  auto v = spanner::Value::Timestamp(t);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->proto().string_value(), "2023-11-14T22:13:20.123456789Z");
  EXPECT_EQ(*RoundTrip(*v).as_timestamp(), t);
  EXPECT_EQ(FormatTimestamp(absl::FromUnixSeconds(0)), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatTimestamp(absl::FromUnixMillis(1500)), "1970-01-01T00:00:01.5Z");
  const absl::Time min = *ParseTimestamp("0001-01-01T00:00:00Z");
  const absl::Time max = *ParseTimestamp("9999-12-31T23:59:59.999999999Z");
  EXPECT_EQ(FormatTimestamp(min), "0001-01-01T00:00:00Z");
  EXPECT_EQ(FormatTimestamp(max), "9999-12-31T23:59:59.999999999Z");
  EXPECT_FALSE(spanner::Value::Timestamp(min - absl::Nanoseconds(1)).ok());
  EXPECT_FALSE(spanner::Value::Timestamp(max + absl::Nanoseconds(1)).ok());
  EXPECT_EQ(*ParseTimestamp("2023-11-14T23:13:20+01:00"), absl::FromUnixSeconds(1700000000));
  for (const char* bad : {"2023-11-14T22:13:20", "2023-11-14T22:13:20.1234567891Z",
                          "2023-11-14T24:00:00Z", "2023-11-14T22:13:20.Z", "x"}) {
    EXPECT_FALSE(ParseTimestamp(bad).ok()) << bad;
  }
  auto placeholder = spanner::Value::CommitTimestamp();
  EXPECT_EQ(placeholder.proto().string_value(), "spanner.commit_timestamp()");
  EXPECT_EQ(placeholder.as_timestamp().status().code(), absl::StatusCode::kFailedPrecondition);
}

// Spanner takes a mutation's TIMESTAMP only in UTC ("Z"); the emulator answers
// FAILED_PRECONDITION to "+01:00". What the parser accepts travels as the same instant in the
// canonical form, in arrays too; the commit-timestamp placeholder and NULL are left alone.
TEST(SpannerValueTest, TimestampsFromTheWireTravelInCanonicalUtc) {
  auto wire = [](const std::string& text) {
    Value v;
    v.set_string_value(text);
    return v;
  };
  const auto ts = MakeType(sp::TIMESTAMP);
  for (const auto& [in, out] : std::vector<std::pair<std::string, std::string>>{
           {"2023-11-14T23:13:20+01:00", "2023-11-14T22:13:20Z"},
           {"2023-11-14t22:13:20.500z", "2023-11-14T22:13:20.5Z"},
           {"2023-11-14 21:13:20.000000001-01:00", "2023-11-14T22:13:20.000000001Z"},
           {"2023-11-14T22:13:20Z", "2023-11-14T22:13:20Z"},
           {"spanner.commit_timestamp()", "spanner.commit_timestamp()"}}) {
    auto v = spanner::Value::FromProto(ts, wire(in));
    ASSERT_TRUE(v.ok()) << in << ": " << v.status();
    EXPECT_EQ(v->proto().string_value(), out) << in;
  }
  Value list;
  *list.mutable_list_value()->add_values() = wire("2000-01-01T01:00:00+01:00");
  list.mutable_list_value()->add_values()->set_null_value(google::protobuf::NULL_VALUE);
  auto array = spanner::Value::FromProto(ArrayOf(ts), list);
  ASSERT_TRUE(array.ok()) << array.status();
  EXPECT_EQ(array->proto().list_value().values(0).string_value(), "2000-01-01T00:00:00Z");
  EXPECT_TRUE(array->proto().list_value().values(1).has_null_value());
}

TEST(SpannerValueTest, JsonIsCheckedAndPostgreSqlJsonbCarriesItsAnnotation) {
  EXPECT_EQ(*RoundTrip(*spanner::Value::Json(R"({"a":[1,2,null]})")).as_string(),
            R"({"a":[1,2,null]})");
  EXPECT_EQ(spanner::Value::Json("{\"a\":").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(spanner::Value::Json("1 2").ok()) << "one document, not two";
  auto jsonb = spanner::Value::PgJsonb("[true]");
  ASSERT_TRUE(jsonb.ok());
  EXPECT_EQ(jsonb->type().type_annotation(), sp::PG_JSONB);
  EXPECT_EQ(spanner::Value::TypeName(jsonb->type()), "JSON<PG_JSONB>");
}

TEST(SpannerValueTest, ArraysAreTypedMayHoldNullsAndDoNotNest) {
  auto v = spanner::Value::Array(
      MakeType(sp::INT64), {spanner::Value::Int64(1), spanner::Value::Null(MakeType(sp::INT64)),
                            spanner::Value::Int64(3)});
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(spanner::Value::TypeName(v->type()), "ARRAY<INT64>");
  auto elements = RoundTrip(*v).as_array();
  ASSERT_TRUE(elements.ok());
  ASSERT_EQ(elements->size(), 3u);
  EXPECT_TRUE((*elements)[1].is_null());
  EXPECT_EQ(*(*elements)[2].as_int64(), 3);
  auto mixed = spanner::Value::Array(MakeType(sp::INT64), {spanner::Value::Bool(true)});
  EXPECT_NE(mixed.status().message().find("element 0 is BOOL"), std::string::npos)
      << mixed.status();
  EXPECT_FALSE(spanner::Value::Array(ArrayOf(MakeType(sp::INT64)), {}).ok());
  Value wire;
  wire.mutable_list_value()->add_values()->set_string_value("x");
  auto decoded = spanner::Value::FromProto(ArrayOf(MakeType(sp::INT64)), wire);
  EXPECT_NE(decoded.status().message().find("element 0"), std::string::npos) << decoded.status();
}

TEST(SpannerValueTest, StructsDecodeFieldByField) {
  auto v = spanner::Value::Struct(
      {{"id", spanner::Value::Int64(7)}, {"", spanner::Value::Null(MakeType(sp::STRING))}});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(spanner::Value::TypeName(v->type()), "STRUCT<id INT64, STRING>");
  auto fields = RoundTrip(*v).as_struct();
  ASSERT_TRUE(fields.ok());
  EXPECT_EQ((*fields)[0].first, "id");
  EXPECT_TRUE((*fields)[1].second.is_null());
  Value short_wire;
  short_wire.mutable_list_value()->add_values()->set_string_value("7");
  EXPECT_FALSE(spanner::Value::FromProto(v->type(), short_wire).ok()) << "two fields, one value";
}

TEST(SpannerValueTest, NullOfEveryTypeRoundTripsAndRefusesTypedAccess) {
  const std::vector<sp::Type> types = {
      MakeType(sp::BOOL),           MakeType(sp::INT64),   MakeType(sp::FLOAT64),
      MakeType(sp::FLOAT32),        MakeType(sp::NUMERIC), MakeType(sp::NUMERIC, sp::PG_NUMERIC),
      MakeType(sp::STRING),         MakeType(sp::BYTES),   MakeType(sp::DATE),
      MakeType(sp::TIMESTAMP),      MakeType(sp::JSON),    MakeType(sp::JSON, sp::PG_JSONB),
      ArrayOf(MakeType(sp::STRING))};
  for (const auto& type : types) {
    auto null = spanner::Value::Null(type);
    auto back = RoundTrip(null);
    EXPECT_TRUE(back.is_null()) << spanner::Value::TypeName(type);
    EXPECT_TRUE(back == null) << spanner::Value::TypeName(type);
  }
  auto null_int = spanner::Value::Null(MakeType(sp::INT64));
  EXPECT_EQ(null_int.as_int64().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(null_int.as_int64().status().message().find("NULL"), std::string::npos);
  EXPECT_EQ(spanner::Value::Int64(1).as_string().status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(SpannerValueTest, TypesThisClientDoesNotModelAreUnimplementedNotGuessed) {
  Value wire;
  wire.set_string_value("x");
  EXPECT_EQ(spanner::Value::FromProto(MakeType(sp::PROTO), wire).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(spanner::Value::FromProto(MakeType(sp::UUID), wire).status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST(SpannerValueTest, DeeplyNestedWireTypesAreRefusedNotRecursedWithoutBound) {
  sp::Type type = MakeType(sp::INT64);
  Value wire;
  wire.set_string_value("1");
  for (int i = 0; i < 100; ++i) {
    sp::Type outer;
    outer.set_code(sp::STRUCT);
    auto* f = outer.mutable_struct_type()->add_fields();
    *f->mutable_type() = type;
    type = outer;
    Value outer_wire;
    *outer_wire.mutable_list_value()->add_values() = wire;
    wire = outer_wire;
  }
  EXPECT_EQ(spanner::Value::FromProto(type, wire).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gcpstream::spanner
