// The Storage Write API's value encodings ("Supported protocol buffer data types"): NUMERIC and
// BIGNUMERIC as scaled little-endian two's complement, DATE as days, DATETIME and TIME packed
// (the CivilTimeEncoding layout), TIMESTAMP as microseconds; each range edge, in and out.
#include "gcpstream/bigquery/schema/wire_values.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gcpstream::bigquery::wire {
namespace {

using ::testing::HasSubstr;

std::string Hex(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}

TEST(WireValuesTest, NumericIsTheValueTimesTenToTheNineLittleEndian) {
  // 123.5e9 = 0x1CC12C7300; -1.5e9 = two's complement of 0x59682F00.
  EXPECT_EQ(Hex(*EncodeNumeric("123.5")), "00732cc11c");
  EXPECT_EQ(Hex(*EncodeNumeric("-1.5")), "00d197a6");
  EXPECT_EQ(Hex(*EncodeNumeric("0")), "00");
  EXPECT_EQ(Hex(*EncodeNumeric("-0.000")), "00");
  EXPECT_EQ(Hex(*EncodeNumeric("0.000000001")), "01");
  EXPECT_EQ(Hex(*EncodeNumeric("-0.000000001")), "ff");
  // 128e-9 needs a second byte to stay positive; -128e-9 does not.
  EXPECT_EQ(Hex(*EncodeNumeric("0.000000128")), "8000");
  EXPECT_EQ(Hex(*EncodeNumeric("-0.000000128")), "80");
  EXPECT_EQ(Hex(*EncodeNumeric("+007.10")), Hex(*EncodeNumeric("7.1")));
}

TEST(WireValuesTest, NumericAndBigNumericRangesAreTheirDocumentedDigits) {
  EXPECT_TRUE(EncodeNumeric("99999999999999999999999999999.999999999").ok());
  EXPECT_THAT(EncodeNumeric("100000000000000000000000000000").status().message(),
              HasSubstr("out of range"));
  EXPECT_FALSE(EncodeNumeric("1.0000000001").ok());
  EXPECT_TRUE(EncodeBigNumeric("-12345678901234567890123456789012345678.5").ok());
  EXPECT_FALSE(EncodeBigNumeric("123456789012345678901234567890123456789").ok());
  for (const char* bad : {"", ".", "1e5", "abc", "1.2.3", "--1", "0x10", " 1"}) {
    EXPECT_FALSE(EncodeNumeric(bad).ok()) << bad;
  }
}

TEST(WireValuesTest, DatesAreDaysSinceTheEpochWithinYearsOneToNineThousandNineHundredNinetyNine) {
  EXPECT_EQ(*EncodeDate("1970-01-01"), 0);
  EXPECT_EQ(*EncodeDate("2024-02-29"), 19782);
  EXPECT_EQ(*EncodeDate("1969-12-31"), -1);
  EXPECT_EQ(*EncodeDate("0001-01-01"), -719162);
  EXPECT_EQ(*EncodeDate("9999-12-31"), 2932896);
  for (const char* bad : {"2023-02-29", "0000-12-31", "2024-13-01", "2024-1-1x", "24-01-01"}) {
    EXPECT_FALSE(EncodeDate(bad).ok()) << bad;
  }
  EXPECT_FALSE(EncodeDate(absl::CivilDay(10000, 1, 1)).ok());
}

TEST(WireValuesTest, DatetimeAndTimePackTheirFieldsIntoBitRanges) {
  const std::int64_t expected = (2024LL << 46) | (2LL << 42) | (29LL << 37) | (13LL << 32) |
                                (45LL << 26) | (30LL << 20) | 123;
  EXPECT_EQ(*EncodeDatetime("2024-02-29T13:45:30.000123"), expected);
  EXPECT_EQ(*EncodeDatetime("2024-02-29 13:45:30.000123"), expected);
  EXPECT_EQ(*EncodeTime("13:45:30.5"), (13LL << 32) | (45LL << 26) | (30LL << 20) | 500000);
  EXPECT_EQ(*EncodeTime("00:00"), 0);
  for (const char* bad : {"24:00:00", "12:60:00", "12:00:60", "12:00:00.1234567", "noon"}) {
    EXPECT_FALSE(EncodeTime(bad).ok()) << bad;
  }
  EXPECT_FALSE(EncodeDatetime("2023-02-29T00:00:00").ok());
  EXPECT_FALSE(EncodeDatetime("0000-01-01T00:00:00").ok());
}

TEST(WireValuesTest, TimestampsAreMicrosecondsWithinTheDocumentedRange) {
  EXPECT_EQ(*EncodeTimestamp("1970-01-01T00:00:01.5Z"), 1500000);
  EXPECT_EQ(*EncodeTimestamp("2023-11-14 22:13:20.123456 UTC"), 1700000000123456);
  EXPECT_EQ(*EncodeTimestamp("2023-11-14 23:13:20+01:00"), 1700000000000000);
  EXPECT_EQ(*EncodeTimestamp("0001-01-01T00:00:00Z"), -62135596800000000);
  EXPECT_EQ(*EncodeTimestamp("9999-12-31T23:59:59.999999Z"), 253402300799999999);
  // Finer than a microsecond is truncated toward the past.
  EXPECT_EQ(*EncodeTimestamp(absl::FromUnixNanos(-1)), -1);
  EXPECT_FALSE(EncodeTimestamp("10000-01-01T00:00:00Z").ok());
  EXPECT_FALSE(EncodeTimestamp(absl::InfiniteFuture()).ok());
  EXPECT_FALSE(EncodeTimestamp(absl::FromUnixMicros(-62135596800000001)).ok());
  EXPECT_FALSE(EncodeTimestamp("yesterday").ok());
}

}  // namespace
}  // namespace gcpstream::bigquery::wire
