#include "gcpstream/spanner/client/value.h"

#include <google/protobuf/util/message_differencer.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gcpstream/util/utf8.h"
#include "nlohmann/json.hpp"

namespace gcpstream::spanner {
namespace {

namespace sp = google::spanner::v1;
using ProtoValue = google::protobuf::Value;

constexpr std::string_view kNaN = "NaN";
constexpr std::string_view kInfinity = "Infinity";
constexpr std::string_view kNegInfinity = "-Infinity";
constexpr std::string_view kCommitTimestamp = "spanner.commit_timestamp()";

// GoogleSQL NUMERIC is precision 38, scale 9; PostgreSQL NUMERIC allows 131072 digits before
// the point and 16383 after (Spanner data types reference: "NUMERIC type", "PostgreSQL
// NUMERIC").
constexpr std::size_t kNumericIntegerDigits = 29;
constexpr std::size_t kNumericFractionDigits = 9;
constexpr std::size_t kPgNumericIntegerDigits = 131072;
constexpr std::size_t kPgNumericFractionDigits = 16383;

absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }

absl::Status Invalid(const sp::Type& type, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("Spanner ", Value::TypeName(type), " value: ", AV(what)));
}

absl::Status WrongAccess(const Value& v, std::string_view wanted) {
  if (v.is_null()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the ", Value::TypeName(v.type()), " value is NULL, not ", AV(wanted)));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("the value is ", Value::TypeName(v.type()), ", not ", AV(wanted)));
}

bool TypeEquals(const sp::Type& a, const sp::Type& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

ProtoValue StringValue(std::string s) {
  ProtoValue v;
  v.set_string_value(std::move(s));
  return v;
}

ProtoValue FloatValue(double d) {
  if (std::isnan(d)) return StringValue(std::string(kNaN));
  if (std::isinf(d)) return StringValue(std::string(d > 0 ? kInfinity : kNegInfinity));
  ProtoValue v;
  v.set_number_value(d);
  return v;
}

// Checks a decimal "[+-]digits[.digits]" against digit budgets; returns it without a '+'.
absl::StatusOr<std::string> CheckDecimal(const sp::Type& type, std::string_view text,
                                         std::size_t max_integer, std::size_t max_fraction) {
  std::string_view rest = text;
  std::string out;
  if (!rest.empty() && (rest.front() == '-' || rest.front() == '+')) {
    if (rest.front() == '-') out.push_back('-');
    rest.remove_prefix(1);
  }
  const std::size_t dot = rest.find('.');
  const std::string_view integer = rest.substr(0, dot);
  const std::string_view fraction =
      dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
  auto all_digits = [](std::string_view s) {
    for (char c : s) {
      if (c < '0' || c > '9') return false;
    }
    return true;
  };
  if ((integer.empty() && fraction.empty()) || !all_digits(integer) || !all_digits(fraction)) {
    return Invalid(type, absl::StrCat("\"", AV(text.substr(0, 64)),
                                      "\" is not a decimal ([+-]digits[.digits])"));
  }
  const std::size_t first_nonzero = integer.find_first_not_of('0');
  const std::size_t significant =
      first_nonzero == std::string_view::npos ? 0 : integer.size() - first_nonzero;
  if (significant > max_integer) {
    return Invalid(
        type, absl::StrCat(significant, " integer digits; the type holds at most ", max_integer));
  }
  if (fraction.size() > max_fraction) {
    return Invalid(type, absl::StrCat(fraction.size(), " fraction digits; the type holds at most ",
                                      max_fraction, " and this client rounds nothing"));
  }
  out.append(rest);
  return out;
}

absl::StatusOr<std::string> CheckNumeric(const sp::Type& type, std::string_view text) {
  if (type.type_annotation() == sp::PG_NUMERIC) {
    if (text.size() == 3 && (text[0] == 'n' || text[0] == 'N') &&
        (text[1] == 'a' || text[1] == 'A') && (text[2] == 'n' || text[2] == 'N')) {
      return std::string(kNaN);
    }
    return CheckDecimal(type, text, kPgNumericIntegerDigits, kPgNumericFractionDigits);
  }
  return CheckDecimal(type, text, kNumericIntegerDigits, kNumericFractionDigits);
}

bool DayInRange(absl::CivilDay day) {
  return day >= absl::CivilDay(1, 1, 1) && day <= absl::CivilDay(9999, 12, 31);
}

std::string FormatDay(absl::CivilDay day) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", static_cast<int>(day.year()), day.month(),
                day.day());
  return buf;
}

// Reads exactly `width` digits at `*pos`.
bool ReadDigits(std::string_view s, std::size_t* pos, std::size_t width, int* out) {
  if (*pos + width > s.size()) return false;
  int v = 0;
  for (std::size_t i = 0; i < width; ++i) {
    const char c = s[*pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *pos += width;
  *out = v;
  return true;
}

bool Expect(std::string_view s, std::size_t* pos, char c) {
  if (*pos >= s.size() || s[*pos] != c) return false;
  ++*pos;
  return true;
}

// "YYYY-MM-DD" at *pos, checked to be a real calendar day.
bool ReadDay(std::string_view s, std::size_t* pos, absl::CivilDay* day) {
  int y, m, d;
  if (!ReadDigits(s, pos, 4, &y) || !Expect(s, pos, '-') || !ReadDigits(s, pos, 2, &m) ||
      !Expect(s, pos, '-') || !ReadDigits(s, pos, 2, &d)) {
    return false;
  }
  *day = absl::CivilDay(y, m, d);
  return day->year() == y && day->month() == m && day->day() == d;  // no normalisation
}

absl::StatusOr<absl::CivilDay> ParseDate(const sp::Type& type, std::string_view text) {
  std::size_t pos = 0;
  absl::CivilDay day;
  if (!ReadDay(text, &pos, &day) || pos != text.size() || !DayInRange(day)) {
    return Invalid(type, absl::StrCat("\"", AV(text.substr(0, 64)),
                                      "\" is not a date YYYY-MM-DD in 0001-01-01..9999-12-31"));
  }
  return day;
}

const absl::Time kMinTimestamp =
    absl::FromCivil(absl::CivilSecond(1, 1, 1, 0, 0, 0), absl::UTCTimeZone());
const absl::Time kMaxTimestamp =
    absl::FromCivil(absl::CivilSecond(9999, 12, 31, 23, 59, 59), absl::UTCTimeZone()) +
    absl::Nanoseconds(999999999);

absl::Status CheckTimestamp(absl::Time t) {
  if (t < kMinTimestamp || t > kMaxTimestamp) {
    return absl::InvalidArgumentError(
        "Spanner TIMESTAMP value: outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59.999999999Z");
  }
  return absl::OkStatus();
}

absl::Status CheckJson(const sp::Type& type, const std::string& text) {
  if (!nlohmann::json::accept(text)) {
    return Invalid(type, "not one valid JSON document");
  }
  return absl::OkStatus();
}

absl::Status CheckFloat(const sp::Type& type, const ProtoValue& v) {
  if (v.kind_case() == ProtoValue::kNumberValue) {
    if (type.code() == sp::FLOAT32 && std::isfinite(v.number_value()) &&
        std::fabs(v.number_value()) > std::numeric_limits<float>::max()) {
      return Invalid(type, "out of the FLOAT32 range");
    }
    return absl::OkStatus();
  }
  if (v.kind_case() == ProtoValue::kStringValue &&
      (v.string_value() == kNaN || v.string_value() == kInfinity ||
       v.string_value() == kNegInfinity)) {
    return absl::OkStatus();
  }
  return Invalid(type, "a number, \"NaN\", \"Infinity\" or \"-Infinity\" is expected");
}

absl::Status Check(const sp::Type& type, const ProtoValue& v, int depth);

absl::Status CheckKind(const sp::Type& type, const ProtoValue& v, ProtoValue::KindCase kind,
                       std::string_view kind_name) {
  if (v.kind_case() != kind) {
    return Invalid(type, absl::StrCat("the wire value must be a ", AV(kind_name)));
  }
  return absl::OkStatus();
}

absl::Status Check(const sp::Type& type, const ProtoValue& v, int depth) {
  // Spanner has no array of arrays and result structs nest shallowly; a bound protects the
  // stack against a hostile or corrupt input.
  if (depth > 16) return Invalid(type, "types nest deeper than 16 levels");
  if (v.kind_case() == ProtoValue::kNullValue) return absl::OkStatus();
  switch (type.code()) {
    case sp::BOOL:
      return CheckKind(type, v, ProtoValue::kBoolValue, "bool");
    case sp::INT64: {
      if (auto s = CheckKind(type, v, ProtoValue::kStringValue, "decimal string"); !s.ok()) {
        return s;
      }
      const std::string& text = v.string_value();
      std::int64_t parsed;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
      if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
        return Invalid(type, absl::StrCat("\"", AV(std::string_view(text).substr(0, 64)),
                                          "\" is not a 64-bit decimal integer"));
      }
      return absl::OkStatus();
    }
    case sp::FLOAT64:
    case sp::FLOAT32:
      return CheckFloat(type, v);
    case sp::NUMERIC: {
      if (auto s = CheckKind(type, v, ProtoValue::kStringValue, "string"); !s.ok()) return s;
      return CheckNumeric(type, v.string_value()).status();
    }
    case sp::STRING:
      if (auto s = CheckKind(type, v, ProtoValue::kStringValue, "string"); !s.ok()) return s;
      if (auto at = util::InvalidUtf8At(v.string_value())) {
        return Invalid(type, absl::StrCat("not UTF-8 at byte ", *at));
      }
      return absl::OkStatus();
    case sp::BYTES: {
      if (auto s = CheckKind(type, v, ProtoValue::kStringValue, "base64 string"); !s.ok()) {
        return s;
      }
      std::string raw;
      if (!absl::Base64Unescape(v.string_value(), &raw)) return Invalid(type, "not base64");
      return absl::OkStatus();
    }
    case sp::DATE:
      if (auto s = CheckKind(type, v, ProtoValue::kStringValue, "string"); !s.ok()) return s;
      return ParseDate(type, v.string_value()).status();
    case sp::TIMESTAMP:
      if (auto s = CheckKind(type, v, ProtoValue::kStringValue, "string"); !s.ok()) return s;
      if (v.string_value() == kCommitTimestamp) return absl::OkStatus();
      return ParseTimestamp(v.string_value()).status();
    case sp::JSON:
      if (auto s = CheckKind(type, v, ProtoValue::kStringValue, "string"); !s.ok()) return s;
      return CheckJson(type, v.string_value());
    case sp::ARRAY: {
      if (auto s = CheckKind(type, v, ProtoValue::kListValue, "list"); !s.ok()) return s;
      if (!type.has_array_element_type()) return Invalid(type, "the array has no element type");
      for (int i = 0; i < v.list_value().values_size(); ++i) {
        if (auto s = Check(type.array_element_type(), v.list_value().values(i), depth + 1);
            !s.ok()) {
          return absl::Status(s.code(), absl::StrCat("element ", i, ": ", s.message()));
        }
      }
      return absl::OkStatus();
    }
    case sp::STRUCT: {
      if (auto s = CheckKind(type, v, ProtoValue::kListValue, "list"); !s.ok()) return s;
      const auto& fields = type.struct_type().fields();
      if (fields.size() != v.list_value().values_size()) {
        return Invalid(type, absl::StrCat(v.list_value().values_size(), " values for ",
                                          fields.size(), " fields"));
      }
      for (int i = 0; i < fields.size(); ++i) {
        if (auto s = Check(fields[i].type(), v.list_value().values(i), depth + 1); !s.ok()) {
          return absl::Status(
              s.code(), absl::StrCat("field ", i, " (", fields[i].name(), "): ", s.message()));
        }
      }
      return absl::OkStatus();
    }
    default:
      return absl::UnimplementedError(
          absl::StrCat("Spanner type ", Value::TypeName(type), " is not supported by this client"));
  }
}

// Rewrites, in place, what Check accepts but Spanner refuses in a mutation: a TIMESTAMP with a
// UTC offset, a lowercase 't'/'z' or a space for the 'T' becomes the same instant in the
// canonical UTC form FormatTimestamp writes (the emulator answers FAILED_PRECONDITION to
// "+01:00"). `value` passed Check.
void Canonicalize(const sp::Type& type, ProtoValue& value) {
  if (value.kind_case() == ProtoValue::kNullValue) return;
  if (type.code() == sp::TIMESTAMP) {
    const std::string& text = value.string_value();
    // What Check accepted with an uppercase 'T' and a 'Z' is already a form Spanner takes (the
    // usual case, every result row's): no second parse.
    if (text == kCommitTimestamp || (text.size() > 10 && text[10] == 'T' && text.back() == 'Z')) {
      return;
    }
    if (absl::StatusOr<absl::Time> t = ParseTimestamp(text); t.ok()) {
      value.set_string_value(FormatTimestamp(*t));
    }
  } else if (type.code() == sp::ARRAY) {
    for (auto& element : *value.mutable_list_value()->mutable_values()) {
      Canonicalize(type.array_element_type(), element);
    }
  } else if (type.code() == sp::STRUCT) {
    const auto& fields = type.struct_type().fields();
    for (int i = 0; i < fields.size(); ++i) {
      Canonicalize(fields[i].type(), *value.mutable_list_value()->mutable_values(i));
    }
  }
}

}  // namespace

std::string_view DialectName(Dialect dialect) {
  return dialect == Dialect::kPostgreSql ? "POSTGRESQL" : "GOOGLE_STANDARD_SQL";
}

Value::Type MakeType(sp::TypeCode code, sp::TypeAnnotationCode annotation) {
  Value::Type t;
  t.set_code(code);
  t.set_type_annotation(annotation);
  return t;
}

Value::Type ArrayOf(Value::Type element) {
  Value::Type t;
  t.set_code(sp::ARRAY);
  *t.mutable_array_element_type() = std::move(element);
  return t;
}

std::string Value::TypeName(const Type& type) {
  std::string name = sp::TypeCode_Name(type.code());
  if (name.empty()) name = absl::StrCat("TYPE_CODE_", static_cast<int>(type.code()));
  if (type.code() == sp::ARRAY) {
    return absl::StrCat("ARRAY<", TypeName(type.array_element_type()), ">");
  }
  if (type.code() == sp::STRUCT) {
    std::string out = "STRUCT<";
    for (int i = 0; i < type.struct_type().fields_size(); ++i) {
      const auto& f = type.struct_type().fields(i);
      absl::StrAppend(&out, i ? ", " : "", f.name(), f.name().empty() ? "" : " ",
                      TypeName(f.type()));
    }
    return out + ">";
  }
  if (type.type_annotation() != sp::TYPE_ANNOTATION_CODE_UNSPECIFIED) {
    absl::StrAppend(&name, "<", sp::TypeAnnotationCode_Name(type.type_annotation()), ">");
  }
  return name;
}

Value Value::Null(Type type) {
  ProtoValue v;
  v.set_null_value(google::protobuf::NULL_VALUE);
  return Value(std::move(type), std::move(v));
}

Value Value::Bool(bool b) {
  ProtoValue v;
  v.set_bool_value(b);
  return Value(MakeType(sp::BOOL), std::move(v));
}

Value Value::Int64(std::int64_t i) {
  return Value(MakeType(sp::INT64), StringValue(std::to_string(i)));
}

Value Value::Float64(double d) { return Value(MakeType(sp::FLOAT64), FloatValue(d)); }

Value Value::Float32(float f) { return Value(MakeType(sp::FLOAT32), FloatValue(f)); }

absl::StatusOr<Value> Value::String(std::string s) {
  if (auto at = util::InvalidUtf8At(s)) {
    return Invalid(MakeType(sp::STRING), absl::StrCat("not UTF-8 at byte ", *at));
  }
  return Value(MakeType(sp::STRING), StringValue(std::move(s)));
}

Value Value::Bytes(std::string_view raw) {
  return Value(MakeType(sp::BYTES), StringValue(absl::Base64Escape(AV(raw))));
}

absl::StatusOr<Value> Value::Numeric(std::string_view decimal) {
  Type type = MakeType(sp::NUMERIC);
  auto text = CheckNumeric(type, decimal);
  if (!text.ok()) return text.status();
  return Value(std::move(type), StringValue(*std::move(text)));
}

absl::StatusOr<Value> Value::PgNumeric(std::string_view decimal) {
  Type type = MakeType(sp::NUMERIC, sp::PG_NUMERIC);
  auto text = CheckNumeric(type, decimal);
  if (!text.ok()) return text.status();
  return Value(std::move(type), StringValue(*std::move(text)));
}

absl::StatusOr<Value> Value::Date(absl::CivilDay day) {
  if (!DayInRange(day)) {
    return Invalid(MakeType(sp::DATE), "outside 0001-01-01..9999-12-31");
  }
  return Value(MakeType(sp::DATE), StringValue(FormatDay(day)));
}

absl::StatusOr<Value> Value::Timestamp(absl::Time t) {
  if (auto s = CheckTimestamp(t); !s.ok()) return s;
  return Value(MakeType(sp::TIMESTAMP), StringValue(FormatTimestamp(t)));
}

Value Value::CommitTimestamp() {
  return Value(MakeType(sp::TIMESTAMP), StringValue(std::string(kCommitTimestamp)));
}

absl::StatusOr<Value> Value::Json(std::string json) {
  Type type = MakeType(sp::JSON);
  if (auto s = CheckJson(type, json); !s.ok()) return s;
  return Value(std::move(type), StringValue(std::move(json)));
}

absl::StatusOr<Value> Value::PgJsonb(std::string json) {
  Type type = MakeType(sp::JSON, sp::PG_JSONB);
  if (auto s = CheckJson(type, json); !s.ok()) return s;
  return Value(std::move(type), StringValue(std::move(json)));
}

absl::StatusOr<Value> Value::Array(Type element_type, std::vector<Value> elements) {
  Type type = ArrayOf(element_type);
  if (element_type.code() == sp::ARRAY) {
    return Invalid(type, "Spanner has no array of arrays");
  }
  ProtoValue v;
  auto* list = v.mutable_list_value();
  for (std::size_t i = 0; i < elements.size(); ++i) {
    if (!TypeEquals(elements[i].type(), element_type)) {
      return Invalid(type, absl::StrCat("element ", i, " is ", TypeName(elements[i].type())));
    }
    *list->add_values() = std::move(elements[i]).release_proto();
  }
  return Value(std::move(type), std::move(v));
}

absl::StatusOr<Value> Value::Struct(std::vector<std::pair<std::string, Value>> fields) {
  Type type;
  type.set_code(sp::STRUCT);
  ProtoValue v;
  auto* list = v.mutable_list_value();
  for (auto& [name, value] : fields) {
    if (auto at = util::InvalidUtf8At(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("Spanner STRUCT field name: not UTF-8 at byte ", *at));
    }
    auto* field = type.mutable_struct_type()->add_fields();
    field->set_name(name);
    *field->mutable_type() = value.type();
    *list->add_values() = std::move(value).release_proto();
  }
  return Value(std::move(type), std::move(v));
}

absl::StatusOr<Value> Value::FromProto(Type type, ProtoValue value) {
  if (auto s = Check(type, value, 0); !s.ok()) return s;
  Canonicalize(type, value);
  return Value(std::move(type), std::move(value));
}

absl::StatusOr<bool> Value::as_bool() const {
  if (type_.code() != sp::BOOL || is_null()) return WrongAccess(*this, "BOOL");
  return value_.bool_value();
}

absl::StatusOr<std::int64_t> Value::as_int64() const {
  if (type_.code() != sp::INT64 || is_null()) return WrongAccess(*this, "INT64");
  const std::string& text = value_.string_value();
  std::int64_t out = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Invalid(type_, "not a 64-bit decimal integer");
  }
  return out;
}

absl::StatusOr<double> Value::as_float64() const {
  if ((type_.code() != sp::FLOAT64 && type_.code() != sp::FLOAT32) || is_null()) {
    return WrongAccess(*this, "FLOAT64");
  }
  if (value_.kind_case() == ProtoValue::kNumberValue) return value_.number_value();
  if (value_.string_value() == kNaN) return std::numeric_limits<double>::quiet_NaN();
  if (value_.string_value() == kInfinity) return std::numeric_limits<double>::infinity();
  return -std::numeric_limits<double>::infinity();
}

absl::StatusOr<std::string> Value::as_string() const {
  const auto code = type_.code();
  if ((code != sp::STRING && code != sp::JSON && code != sp::NUMERIC) || is_null()) {
    return WrongAccess(*this, "STRING");
  }
  return value_.string_value();
}

absl::StatusOr<std::string> Value::as_bytes() const {
  if (type_.code() != sp::BYTES || is_null()) return WrongAccess(*this, "BYTES");
  std::string raw;
  if (!absl::Base64Unescape(value_.string_value(), &raw)) return Invalid(type_, "not base64");
  return raw;
}

absl::StatusOr<absl::CivilDay> Value::as_date() const {
  if (type_.code() != sp::DATE || is_null()) return WrongAccess(*this, "DATE");
  return ParseDate(type_, value_.string_value());
}

absl::StatusOr<absl::Time> Value::as_timestamp() const {
  if (type_.code() != sp::TIMESTAMP || is_null()) return WrongAccess(*this, "TIMESTAMP");
  if (value_.string_value() == kCommitTimestamp) {
    return absl::FailedPreconditionError(
        "the TIMESTAMP is the commit-timestamp placeholder, which only the service resolves");
  }
  return ParseTimestamp(value_.string_value());
}

absl::StatusOr<std::vector<Value>> Value::as_array() const {
  if (type_.code() != sp::ARRAY || is_null()) return WrongAccess(*this, "ARRAY");
  std::vector<Value> out;
  out.reserve(value_.list_value().values_size());
  for (const auto& element : value_.list_value().values()) {
    out.push_back(Value(type_.array_element_type(), element));
  }
  return out;
}

absl::StatusOr<std::vector<std::pair<std::string, Value>>> Value::as_struct() const {
  if (type_.code() != sp::STRUCT || is_null()) return WrongAccess(*this, "STRUCT");
  std::vector<std::pair<std::string, Value>> out;
  const auto& fields = type_.struct_type().fields();
  for (int i = 0; i < fields.size() && i < value_.list_value().values_size(); ++i) {
    out.emplace_back(fields[i].name(), Value(fields[i].type(), value_.list_value().values(i)));
  }
  return out;
}

bool operator==(const Value& a, const Value& b) {
  return TypeEquals(a.type_, b.type_) &&
         google::protobuf::util::MessageDifferencer::Equals(a.value_, b.value_);
}

std::string FormatTimestamp(absl::Time t) {
  const absl::TimeZone utc = absl::UTCTimeZone();
  const absl::CivilSecond cs = absl::ToCivilSecond(t, utc);
  const std::int64_t nanos = absl::ToInt64Nanoseconds(t - absl::FromCivil(cs, utc));
  char buf[64];
  int n =
      std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d", static_cast<int>(cs.year()),
                    cs.month(), cs.day(), cs.hour(), cs.minute(), cs.second());
  std::string out(buf, static_cast<std::size_t>(n));
  if (nanos > 0) {
    std::snprintf(buf, sizeof buf, ".%09lld", static_cast<long long>(nanos));
    std::string fraction(buf);
    while (fraction.back() == '0') fraction.pop_back();
    out += fraction;
  }
  out += 'Z';
  return out;
}

absl::StatusOr<absl::Time> ParseTimestamp(std::string_view text) {
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("Spanner TIMESTAMP value: \"", AV(text.substr(0, 64)),
                     "\" is not RFC 3339 (YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM)) in range"));
  };
  std::size_t pos = 0;
  absl::CivilDay day;
  int hh, mm, ss;
  if (!ReadDay(text, &pos, &day) || pos >= text.size() ||
      (text[pos] != 'T' && text[pos] != 't' && text[pos] != ' ')) {
    return bad();
  }
  ++pos;
  if (!ReadDigits(text, &pos, 2, &hh) || !Expect(text, &pos, ':') ||
      !ReadDigits(text, &pos, 2, &mm) || !Expect(text, &pos, ':') ||
      !ReadDigits(text, &pos, 2, &ss) || hh > 23 || mm > 59 || ss > 59) {
    return bad();
  }
  std::int64_t nanos = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    std::size_t digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits == 9) return bad();  // finer than a nanosecond
      nanos = nanos * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return bad();
    for (std::size_t i = digits; i < 9; ++i) nanos *= 10;
  }
  int offset_minutes = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    int oh, om;
    if (!ReadDigits(text, &pos, 2, &oh) || !Expect(text, &pos, ':') ||
        !ReadDigits(text, &pos, 2, &om) || oh > 23 || om > 59) {
      return bad();
    }
    offset_minutes = sign * (oh * 60 + om);
  } else {
    return bad();
  }
  if (pos != text.size()) return bad();
  const absl::Time t =
      absl::FromCivil(absl::CivilSecond(day.year(), day.month(), day.day(), hh, mm, ss),
                      absl::UTCTimeZone()) +
      absl::Nanoseconds(nanos) - absl::Minutes(offset_minutes);
  if (!CheckTimestamp(t).ok()) return bad();
  return t;
}

}  // namespace gcpstream::spanner
