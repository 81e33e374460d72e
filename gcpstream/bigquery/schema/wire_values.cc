#include "gcpstream/bigquery/schema/wire_values.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <vector>

namespace gcpstream::bigquery::wire {
namespace {

constexpr std::int64_t kMinTimestampMicros = -62135596800000000LL;  // 0001-01-01T00:00:00Z
constexpr std::int64_t kMaxTimestampMicros = 253402300799999999LL;  // 9999-12-31T23:59:59.999999Z

// `decimal` x 10^scale as a little-endian two's-complement integer in the fewest bytes.
absl::StatusOr<std::string> EncodeScaled(std::string_view decimal, int scale, int max_integer,
                                         const char* type) {
  static const RE2 kDecimal(R"(([+-]?)(\d*)(?:\.(\d*))?)");
  std::string sign, integer, fraction;
  if (!RE2::FullMatch(decimal, kDecimal, &sign, &integer, &fraction) ||
      (integer.empty() && fraction.empty())) {
    return absl::InvalidArgumentError(
        fmt::format("{} value \"{}\" is not a decimal number", type, decimal));
  }
  integer.erase(0, std::min(integer.find_first_not_of('0'), integer.size()));
  while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
  if (integer.size() > static_cast<std::size_t>(max_integer) ||
      fraction.size() > static_cast<std::size_t>(scale)) {
    return absl::InvalidArgumentError(
        fmt::format("{} value \"{}\" is out of range: at most {} integer and {} fractional digits",
                    type, decimal, max_integer, scale));
  }
  const std::string digits =
      integer + fraction + std::string(static_cast<std::size_t>(scale) - fraction.size(), '0');
  // Little-endian magnitude, base 256.
  std::vector<std::uint8_t> bytes;
  for (char c : digits) {
    unsigned carry = static_cast<unsigned>(c - '0');
    for (auto& b : bytes) {
      const unsigned v = b * 10u + carry;
      b = static_cast<std::uint8_t>(v & 0xFF);
      carry = v >> 8;
    }
    while (carry != 0) {
      bytes.push_back(static_cast<std::uint8_t>(carry & 0xFF));
      carry >>= 8;
    }
  }
  // Room for the sign bit.
  if (bytes.empty() || (bytes.back() & 0x80) != 0) bytes.push_back(0);
  const bool negative =
      sign == "-" && std::any_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b != 0; });
  if (negative) {
    bool carry = true;
    for (auto& b : bytes) {
      b = static_cast<std::uint8_t>(~b);
      if (carry) carry = (++b == 0);
    }
    // Drop redundant 0xFF bytes while the sign stays.
    while (bytes.size() > 1 && bytes.back() == 0xFF && (bytes[bytes.size() - 2] & 0x80) != 0) {
      bytes.pop_back();
    }
  } else {
    while (bytes.size() > 1 && bytes.back() == 0 && (bytes[bytes.size() - 2] & 0x80) == 0) {
      bytes.pop_back();
    }
  }
  return std::string(bytes.begin(), bytes.end());
}

absl::Status CheckClock(int hour, int minute, int second, int micros) {
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 ||
      micros < 0 || micros > 999999) {
    return absl::InvalidArgumentError(
        fmt::format("time {:02}:{:02}:{:02}.{:06} is out of range", hour, minute, second, micros));
  }
  return absl::OkStatus();
}

// ".ffffff" (1-6 digits) as microseconds.
int Micros(const std::string& fraction) {
  std::string padded = fraction;
  padded.resize(6, '0');
  return std::stoi(padded);
}

}  // namespace

absl::StatusOr<std::string> EncodeNumeric(std::string_view decimal) {
  return EncodeScaled(decimal, 9, 29, "NUMERIC");
}

absl::StatusOr<std::string> EncodeBigNumeric(std::string_view decimal) {
  return EncodeScaled(decimal, 38, 38, "BIGNUMERIC");
}

absl::StatusOr<std::int32_t> EncodeDate(absl::CivilDay day) {
  if (day.year() < 1 || day.year() > 9999) {
    return absl::InvalidArgumentError(
        fmt::format("DATE year {} is outside 0001..9999", day.year()));
  }
  return static_cast<std::int32_t>(day - absl::CivilDay(1970, 1, 1));
}

absl::StatusOr<std::int32_t> EncodeDate(std::string_view text) {
  int y = 0, m = 0, d = 0;
  if (RE2::FullMatch(text, R"((\d{4})-(\d{1,2})-(\d{1,2}))", &y, &m, &d)) {
    const absl::CivilDay day(y, m, d);
    if (day.year() == y && day.month() == m && day.day() == d) return EncodeDate(day);
  }
  return absl::InvalidArgumentError(fmt::format("\"{}\" is not a DATE (YYYY-MM-DD)", text));
}

absl::StatusOr<std::int64_t> EncodeTime(int hour, int minute, int second, int micros) {
  if (absl::Status s = CheckClock(hour, minute, second, micros); !s.ok()) return s;
  return (static_cast<std::int64_t>(hour) << 32) | (static_cast<std::int64_t>(minute) << 26) |
         (static_cast<std::int64_t>(second) << 20) | micros;
}

absl::StatusOr<std::int64_t> EncodeTime(std::string_view text) {
  int h = 0, m = 0;
  std::string s, fraction;  // an absent optional group captures "", which no int parses
  if (!RE2::FullMatch(text, R"((\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)", &h, &m, &s,
                      &fraction)) {
    return absl::InvalidArgumentError(
        fmt::format("\"{}\" is not a TIME (HH:MM[:SS[.ffffff]])", text));
  }
  return EncodeTime(h, m, s.empty() ? 0 : std::stoi(s), Micros(fraction));
}

absl::StatusOr<std::int64_t> EncodeDatetime(absl::CivilSecond second, int micros) {
  if (second.year() < 1 || second.year() > 9999) {
    return absl::InvalidArgumentError(
        fmt::format("DATETIME year {} is outside 0001..9999", second.year()));
  }
  auto clock = EncodeTime(second.hour(), second.minute(), second.second(), micros);
  if (!clock.ok()) return clock.status();
  return (static_cast<std::int64_t>(second.year()) << 46) |
         (static_cast<std::int64_t>(second.month()) << 42) |
         (static_cast<std::int64_t>(second.day()) << 37) | *clock;
}

absl::StatusOr<std::int64_t> EncodeDatetime(std::string_view text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0;
  std::string sec, fraction;
  if (RE2::FullMatch(
          text, R"((\d{4})-(\d{1,2})-(\d{1,2})[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)",
          &y, &mo, &d, &h, &mi, &sec, &fraction)) {
    const int s = sec.empty() ? 0 : std::stoi(sec);
    const absl::CivilSecond civil(y, mo, d, h, mi, s);
    if (civil.year() == y && civil.month() == mo && civil.day() == d && civil.hour() == h &&
        civil.minute() == mi && civil.second() == s) {
      return EncodeDatetime(civil, Micros(fraction));
    }
  }
  return absl::InvalidArgumentError(
      fmt::format("\"{}\" is not a DATETIME (YYYY-MM-DD[T ]HH:MM[:SS[.ffffff]])", text));
}

absl::StatusOr<std::int64_t> EncodeTimestamp(absl::Time time) {
  if (time < absl::FromUnixMicros(kMinTimestampMicros) ||
      time > absl::FromUnixMicros(kMaxTimestampMicros) + absl::Microseconds(1)) {
    return absl::InvalidArgumentError(fmt::format(
        "TIMESTAMP {} is outside 0001-01-01 .. 9999-12-31 UTC", absl::FormatTime(time)));
  }
  const std::int64_t micros = absl::ToUnixMicros(time);  // rounds toward the past
  if (micros > kMaxTimestampMicros) {
    return absl::InvalidArgumentError("TIMESTAMP is after 9999-12-31 23:59:59.999999 UTC");
  }
  return micros;
}

absl::StatusOr<std::int64_t> EncodeTimestamp(std::string_view text) {
  std::string s(text);
  if (s.size() > 4 && s.compare(s.size() - 4, 4, " UTC") == 0) s.resize(s.size() - 4);
  absl::Time t;
  std::string err;
  if (absl::ParseTime(absl::RFC3339_full, s, &t, &err) ||
      absl::ParseTime("%Y-%m-%d %H:%M:%E*S%Ez", s, &t, &err) ||
      absl::ParseTime("%Y-%m-%d %H:%M:%E*S", s, absl::UTCTimeZone(), &t, &err)) {
    return EncodeTimestamp(t);
  }
  return absl::InvalidArgumentError(
      fmt::format("\"{}\" is not a TIMESTAMP (RFC 3339, or YYYY-MM-DD HH:MM:SS[.f][zone])", text));
}

}  // namespace gcpstream::bigquery::wire
