#include "tests/fakes/bigquery/fake_row_decoder.h"

#include <fmt/format.h>
#include <google/protobuf/message.h>
#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "gcpstream/util/utf8.h"
#include "google/cloud/bigquery/storage/v1/annotations.pb.h"
#include "tests/fakes/bigquery/fake_avro.h"
#include "tests/fakes/bigquery/fake_cdc.h"

namespace gcpstream::testing::bigquery_fake {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using CppType = FieldDescriptor::CppType;

// TIMESTAMP's documented range, 0001-01-01 00:00:00 to 9999-12-31 23:59:59.999999 UTC, in µs.
constexpr std::int64_t kMinTimestampMicros = -62135596800000000LL;
constexpr std::int64_t kMaxTimestampMicros = 253402300799999999LL;

// The column a field writes: its `column_name` option when set (flexible column names,
// google/cloud/bigquery/storage/v1/annotations.proto), else its name.
std::string ColumnName(const FieldDescriptor& f) {
  const auto& option = google::cloud::bigquery::storage::v1::column_name;
  if (f.options().HasExtension(option)) return f.options().GetExtension(option);
  return f.name();
}

absl::Status RowError(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(fmt::format("Field {}: {}", path, what));
}

bool Accepts(const Field& column, const FieldDescriptor& f) {
  const auto t = f.type();
  using T = FieldDescriptor;
  const bool is_int = t == T::TYPE_INT32 || t == T::TYPE_INT64 || t == T::TYPE_UINT32 ||
                      t == T::TYPE_SINT32 || t == T::TYPE_SINT64 || t == T::TYPE_SFIXED32 ||
                      t == T::TYPE_SFIXED64 || t == T::TYPE_FIXED32;
  const bool is_float = t == T::TYPE_DOUBLE || t == T::TYPE_FLOAT;
  const std::string& c = column.type;
  if (c == "INT64") return is_int || t == T::TYPE_ENUM;
  if (c == "FLOAT64") return is_float;
  if (c == "BOOL") return t == T::TYPE_BOOL;
  if (c == "BYTES") return t == T::TYPE_BYTES;
  if (c == "STRING" || c == "JSON" || c == "GEOGRAPHY" || c == "INTERVAL") {
    return t == T::TYPE_STRING;
  }
  if (c == "DATE") return t == T::TYPE_INT32 || t == T::TYPE_INT64 || t == T::TYPE_STRING;
  if (c == "DATETIME" || c == "TIME" || c == "TIMESTAMP") {
    return t == T::TYPE_INT64 || t == T::TYPE_STRING;
  }
  if (c == "NUMERIC" || c == "BIGNUMERIC") {
    return t == T::TYPE_BYTES || t == T::TYPE_STRING || is_int || is_float;
  }
  if (c == "RECORD" || c == "RANGE") return t == T::TYPE_MESSAGE || t == T::TYPE_GROUP;
  return false;
}

// Checks the writer schema against the columns, recursively.
absl::Status CheckMessage(const Descriptor& d, const Schema& columns, const std::string& path,
                          RowDecoder::Refusal* refusal) {
  std::unordered_map<std::string, const Field*> by_name;  // one pass, not one per field
  for (const auto& c : columns) by_name.emplace(absl::AsciiStrToLower(c.name), &c);
  for (int i = 0; i < d.field_count(); ++i) {
    const FieldDescriptor& f = *d.field(i);
    // CDC pseudocolumns are written with the row, never as columns (fake_cdc.h).
    if (path.empty() && IsCdcPseudocolumn(ColumnName(f))) {
      *refusal = RowDecoder::Refusal::kInvalid;
      if (f.type() != FieldDescriptor::TYPE_STRING || f.is_repeated()) {
        return absl::InvalidArgumentError(fmt::format(
            "Invalid proto schema: pseudocolumn {} must be a singular string field", f.name()));
      }
      continue;
    }
    auto found = by_name.find(absl::AsciiStrToLower(ColumnName(f)));
    const Field* column = found == by_name.end() ? nullptr : found->second;
    if (column == nullptr) {
      *refusal = RowDecoder::Refusal::kExtraField;
      return absl::InvalidArgumentError(
          fmt::format("Input schema has more fields than BigQuery schema, extra fields: '{}{}'",
                      path, f.name()));
    }
    *refusal = RowDecoder::Refusal::kInvalid;
    if (!Accepts(*column, f)) {
      return absl::InvalidArgumentError(fmt::format(
          "Invalid proto schema: field {}{} of proto type {} cannot be written to a {} column",
          path, f.name(), f.type_name(), column->type));
    }
    if (f.is_repeated() != (column->mode == "REPEATED")) {
      return absl::InvalidArgumentError(
          fmt::format("Invalid proto schema: field {}{} is {} but the column is {}", path, f.name(),
                      f.is_repeated() ? "repeated" : "not repeated", column->mode));
    }
    if (column->type == "RECORD") {
      if (absl::Status s =
              CheckMessage(*f.message_type(), column->fields, path + f.name() + ".", refusal);
          !s.ok()) {
        return s;
      }
    }
  }
  *refusal = RowDecoder::Refusal::kNone;
  return absl::OkStatus();
}

// Validates a decimal's digits against the type: NUMERIC 29 integer and 9 fractional digits,
// BIGNUMERIC 38 and 38.
absl::StatusOr<std::string> CheckDecimal(const std::string& text, const std::string& type,
                                         const std::string& path) {
  static const RE2 kDecimal(R"(([+-]?)0*(\d*)(?:\.(\d*?)0*)?)");
  std::string sign, integer, fraction;
  if (!RE2::FullMatch(text, kDecimal, &sign, &integer, &fraction) ||
      (integer.empty() && fraction.empty() && text.find('0') == std::string::npos)) {
    return RowError(path, fmt::format("invalid {} value \"{}\"", type, text));
  }
  const std::size_t max_int = type == "NUMERIC" ? 29 : 38;
  const std::size_t max_frac = type == "NUMERIC" ? 9 : 38;
  if (integer.size() > max_int || fraction.size() > max_frac) {
    return RowError(path, fmt::format("{} value {} is out of range", type, text));
  }
  std::string out = (integer.empty() ? "0" : integer) + (fraction.empty() ? "" : "." + fraction);
  if (sign == "-" && out != "0") out = "-" + out;
  return out;
}

absl::StatusOr<std::string> DateText(std::int64_t days, const std::string& path) {
  if (days < -1000000 || days > 3000000) {  // far outside 0001..9999 (about ±2.9 million days)
    return RowError(path, fmt::format("DATE {} days from the epoch is out of range", days));
  }
  const absl::CivilDay day = absl::CivilDay(1970, 1, 1) + days;
  if (day.year() < 1 || day.year() > 9999) {
    return RowError(path, fmt::format("DATE {} days from the epoch is out of range", days));
  }
  return fmt::format("{:04}-{:02}-{:02}", day.year(), day.month(), day.day());
}

std::string Micros(std::int64_t micros) { return micros == 0 ? "" : fmt::format(".{:06}", micros); }

absl::StatusOr<nlohmann::json> Scalar(const Message& m, const FieldDescriptor& f, int index,
                                      const Field& column, const std::string& path) {
  const Reflection& r = *m.GetReflection();
  const bool rep = f.is_repeated();
  auto i64 = [&]() -> std::int64_t {
    switch (f.cpp_type()) {
      case CppType::CPPTYPE_INT32:
        return rep ? r.GetRepeatedInt32(m, &f, index) : r.GetInt32(m, &f);
      case CppType::CPPTYPE_INT64:
        return rep ? r.GetRepeatedInt64(m, &f, index) : r.GetInt64(m, &f);
      case CppType::CPPTYPE_UINT32:
        return rep ? r.GetRepeatedUInt32(m, &f, index) : r.GetUInt32(m, &f);
      case CppType::CPPTYPE_ENUM:
        return rep ? r.GetRepeatedEnumValue(m, &f, index) : r.GetEnumValue(m, &f);
      default:
        return 0;
    }
  };
  auto dbl = [&]() -> double {
    if (f.cpp_type() == CppType::CPPTYPE_FLOAT) {
      return rep ? r.GetRepeatedFloat(m, &f, index) : r.GetFloat(m, &f);
    }
    return rep ? r.GetRepeatedDouble(m, &f, index) : r.GetDouble(m, &f);
  };
  auto str = [&]() { return rep ? r.GetRepeatedString(m, &f, index) : r.GetString(m, &f); };
  const bool is_string = f.type() == FieldDescriptor::TYPE_STRING;
  const bool is_bytes = f.type() == FieldDescriptor::TYPE_BYTES;
  const bool is_float =
      f.cpp_type() == CppType::CPPTYPE_DOUBLE || f.cpp_type() == CppType::CPPTYPE_FLOAT;
  std::string text;
  if (is_string) {
    text = str();
    if (auto bad = util::InvalidUtf8At(text)) {
      return RowError(path, fmt::format("invalid UTF-8 at byte {}", *bad));
    }
  }
  const std::string& type = column.type;
  if (type == "INT64") return std::to_string(i64());
  if (type == "FLOAT64") {
    const double v = dbl();
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    return v;
  }
  if (type == "BOOL") return rep ? r.GetRepeatedBool(m, &f, index) : r.GetBool(m, &f);
  if (type == "BYTES") {
    const std::string b = str();
    if (column.max_length > 0 && static_cast<std::int64_t>(b.size()) > column.max_length) {
      return RowError(path,
                      fmt::format("{} bytes exceed maxLength {}", b.size(), column.max_length));
    }
    return absl::Base64Escape(b);
  }
  if (type == "STRING" || type == "INTERVAL") {
    // maxLength counts characters; a byte count bounds it from above.
    std::int64_t chars = 0;
    for (unsigned char c : text) chars += (c & 0xC0) != 0x80;
    if (column.max_length > 0 && chars > column.max_length) {
      return RowError(path,
                      fmt::format("{} characters exceed maxLength {}", chars, column.max_length));
    }
    return text;
  }
  if (type == "JSON") {
    if (nlohmann::json::parse(text, nullptr, false).is_discarded()) {
      return RowError(path, "not a valid JSON value");
    }
    return text;
  }
  if (type == "GEOGRAPHY") {
    static const RE2 kGeography(
        R"((?i)\s*(\{|(MULTI)?(POINT|LINESTRING|POLYGON)\b|GEOMETRYCOLLECTION\b).*)");
    if (!RE2::FullMatch(text, kGeography)) {
      return RowError(path, "not WKT or GeoJSON");
    }
    return text;
  }
  if (type == "DATE") {
    if (!is_string) return DateText(i64(), path);
    int y = 0, mo = 0, d = 0;
    const bool parsed = RE2::FullMatch(text, R"((\d{4})-(\d{1,2})-(\d{1,2}))", &y, &mo, &d);
    const absl::CivilDay day(y, mo, d);  // normalizes: an invalid date changes
    if (!parsed || y < 1 || day.year() != y || day.month() != mo || day.day() != d) {
      return RowError(path, fmt::format("invalid DATE \"{}\"", text));
    }
    return fmt::format("{:04}-{:02}-{:02}", y, mo, d);
  }
  if (type == "DATETIME" || type == "TIME") {
    if (is_string) {
      static const RE2 kDatetime(R"(\d{4}-\d{1,2}-\d{1,2}[T ]\d{1,2}:\d{2}(:\d{2}(\.\d{1,6})?)?)");
      static const RE2 kTime(R"(\d{1,2}:\d{2}(:\d{2}(\.\d{1,6})?)?)");
      if (!RE2::FullMatch(text, type == "TIME" ? kTime : kDatetime)) {
        return RowError(path, fmt::format("invalid {} \"{}\"", type, text));
      }
      return text;
    }
    const auto v = static_cast<std::uint64_t>(i64());
    const int micros = static_cast<int>(v & 0xFFFFF);
    const int second = static_cast<int>((v >> 20) & 0x3F);
    const int minute = static_cast<int>((v >> 26) & 0x3F);
    const int hour = static_cast<int>((v >> 32) & 0x1F);
    if (micros > 999999 || second > 59 || minute > 59 || hour > 23) {
      return RowError(path, fmt::format("invalid packed {} {}", type, i64()));
    }
    const std::string clock =
        fmt::format("{:02}:{:02}:{:02}{}", hour, minute, second, Micros(micros));
    if (type == "TIME") {
      if ((v >> 37) != 0) return RowError(path, fmt::format("invalid packed TIME {}", i64()));
      return clock;
    }
    const int day = static_cast<int>((v >> 37) & 0x1F);
    const int month = static_cast<int>((v >> 42) & 0xF);
    const int year = static_cast<int>((v >> 46) & 0x3FFF);
    const absl::CivilDay civil(year, month, day);
    if (year < 1 || year > 9999 || civil.month() != month || civil.day() != day) {
      return RowError(path, fmt::format("invalid packed DATETIME {}", i64()));
    }
    return fmt::format("{:04}-{:02}-{:02}T{}", year, month, day, clock);
  }
  if (type == "TIMESTAMP") {
    std::int64_t micros = 0;
    if (is_string) {
      absl::Time t;
      std::string err;
      std::string s = text;
      if (s.size() > 4 && s.compare(s.size() - 4, 4, " UTC") == 0) s.resize(s.size() - 4);
      if (!absl::ParseTime(absl::RFC3339_full, s, &t, &err) &&
          !absl::ParseTime("%Y-%m-%d %H:%M:%E*S", s, absl::UTCTimeZone(), &t, &err) &&
          !absl::ParseTime("%Y-%m-%d %H:%M:%E*S%Ez", s, absl::UTCTimeZone(), &t, &err)) {
        return RowError(path, fmt::format("invalid TIMESTAMP \"{}\"", text));
      }
      micros = absl::ToUnixMicros(t);
    } else {
      micros = i64();
    }
    if (micros < kMinTimestampMicros || micros > kMaxTimestampMicros) {
      return RowError(path, fmt::format("TIMESTAMP {} µs is out of range", micros));
    }
    return std::to_string(micros);
  }
  if (type == "NUMERIC" || type == "BIGNUMERIC") {
    if (is_bytes) {
      return CheckDecimal(DecimalFromTwosComplementLE(str(), type == "NUMERIC" ? 9 : 38), type,
                          path);
    }
    if (is_string) return CheckDecimal(text, type, path);
    if (is_float) {
      const double v = dbl();
      if (!std::isfinite(v)) return RowError(path, fmt::format("{} cannot be {}", type, v));
      return CheckDecimal(fmt::format("{:.9f}", v), type, path);
    }
    return std::to_string(i64());
  }
  return RowError(path, "unsupported column type " + type);
}

absl::StatusOr<nlohmann::json> DecodeMessage(const Message& m, const Schema& columns,
                                             const std::string& prefix);

absl::StatusOr<nlohmann::json> Value(const Message& m, const FieldDescriptor& f, int index,
                                     const Field& column, const std::string& path) {
  if (column.type == "RECORD" || column.type == "RANGE") {
    const Reflection& r = *m.GetReflection();
    const Message& sub = f.is_repeated() ? r.GetRepeatedMessage(m, &f, index) : r.GetMessage(m, &f);
    if (column.type == "RANGE") return DecodeMessage(sub, {}, path + ".");
    return DecodeMessage(sub, column.fields, path + ".");
  }
  return Scalar(m, f, index, column, path);
}

absl::StatusOr<nlohmann::json> DecodeMessage(const Message& m, const Schema& columns,
                                             const std::string& prefix) {
  const Descriptor& d = *m.GetDescriptor();
  const Reflection& r = *m.GetReflection();
  nlohmann::json row = nlohmann::json::object();
  // The writer's fields by column name (case-insensitive): one pass, not one per column.
  std::unordered_map<std::string, const FieldDescriptor*> by_column;
  for (int i = 0; i < d.field_count(); ++i) {
    by_column.emplace(absl::AsciiStrToLower(ColumnName(*d.field(i))), d.field(i));
  }
  for (const Field& column : columns) {
    const std::string path = prefix + column.name;
    auto found = by_column.find(absl::AsciiStrToLower(column.name));
    const FieldDescriptor* f = found == by_column.end() ? nullptr : found->second;
    if (column.mode == "REPEATED") {
      nlohmann::json values = nlohmann::json::array();
      const int n = f == nullptr ? 0 : r.FieldSize(m, f);
      for (int i = 0; i < n; ++i) {
        auto v = Value(m, *f, i, column, fmt::format("{}[{}]", path, i));
        if (!v.ok()) return v.status();
        values.push_back(std::move(*v));
      }
      row[column.name] = std::move(values);
      continue;
    }
    const bool present = f != nullptr && (!f->has_presence() || r.HasField(m, f));
    if (!present) {
      if (column.mode == "REQUIRED") return RowError(path, "required field is missing");
      row[column.name] = nullptr;
      continue;
    }
    auto v = Value(m, *f, -1, column, path);
    if (!v.ok()) return v.status();
    row[column.name] = std::move(*v);
  }
  return row;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RowDecoder>> RowDecoder::Create(
    const google::protobuf::DescriptorProto& writer_schema, const Schema& table, Refusal* refusal) {
  *refusal = Refusal::kInvalid;
  std::unique_ptr<RowDecoder> decoder(new RowDecoder());
  google::protobuf::FileDescriptorProto file;
  file.set_name("writer_schema.proto");
  *file.add_message_type() = writer_schema;
  const google::protobuf::FileDescriptor* built = decoder->pool_.BuildFile(file);
  if (built == nullptr || built->message_type_count() != 1) {
    return absl::InvalidArgumentError(
        "Invalid proto schema: the writer schema is not a self-contained DescriptorProto");
  }
  decoder->descriptor_ = built->message_type(0);
  if (absl::Status s = CheckMessage(*decoder->descriptor_, table, "", refusal); !s.ok()) {
    return s;
  }
  const Descriptor& d = *decoder->descriptor_;
  for (int i = 0; i < d.field_count(); ++i) {
    const std::string name = absl::AsciiStrToUpper(ColumnName(*d.field(i)));
    const FieldDescriptor** slot = name == kChangeTypeField       ? &decoder->change_type_
                                   : name == kChangeSequenceField ? &decoder->change_sequence_
                                                                  : nullptr;
    if (slot == nullptr) continue;
    if (*slot != nullptr) {
      return absl::InvalidArgumentError(
          fmt::format("Invalid proto schema: pseudocolumn {} appears twice", name));
    }
    *slot = d.field(i);
  }
  if (decoder->change_sequence_ != nullptr && decoder->change_type_ == nullptr) {
    return absl::InvalidArgumentError(
        "Invalid proto schema: _CHANGE_SEQUENCE_NUMBER is only valid with _CHANGE_TYPE");
  }
  decoder->table_ = table;
  return decoder;
}

absl::StatusOr<nlohmann::json> RowDecoder::decode(const std::string& bytes) const {
  std::unique_ptr<Message> message(factory_.GetPrototype(descriptor_)->New());
  if (!message->ParseFromString(bytes)) {
    return absl::InvalidArgumentError("the row bytes do not parse as the writer schema");
  }
  auto row = DecodeMessage(*message, table_, "");
  if (!row.ok() || change_type_ == nullptr) return row;
  const Reflection& r = *message->GetReflection();
  const std::string type =
      r.HasField(*message, change_type_) ? r.GetString(*message, change_type_) : "";
  if (type != "UPSERT" && type != "DELETE") {
    return RowError(kChangeTypeField,
                    fmt::format("must be UPSERT or DELETE, not \"{}\"", absl::CEscape(type)));
  }
  (*row)[kChangeTypeField] = type;
  if (change_sequence_ != nullptr && r.HasField(*message, change_sequence_)) {
    const std::string sequence = r.GetString(*message, change_sequence_);
    if (auto parsed = ParseChangeSequence(sequence); !parsed.ok()) {
      return RowError(kChangeSequenceField, std::string(parsed.status().message()));
    }
    (*row)[kChangeSequenceField] = sequence;
  }
  return row;
}

}  // namespace gcpstream::testing::bigquery_fake
