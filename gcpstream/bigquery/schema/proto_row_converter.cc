#include "gcpstream/bigquery/schema/proto_row_converter.h"

#include <fmt/format.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/unknown_field_set.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigquery/schema/wire_values.h"
#include "gcpstream/util/utf8.h"

namespace gcpstream::bigquery {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

namespace {

// How one column's value is read from the source message.
enum class Conv {
  kInt64,   // int32 / int64 family
  kUint32,  // widened
  kUint64,  // refused above INT64_MAX
  kFloat,   // widened to double
  kDouble,
  kBool,
  kString,
  kBytes,
  kEnum,       // the value's name
  kTimestamp,  // µs since the epoch
  kDuration,   // µs
  kFieldMask,  // paths joined by ","
  kWrapper,    // the wrapped value (children[0])
  kJsonText,   // a message's canonical protobuf JSON
  kVerbatim,   // a marked string, as it is
  kRecord,     // children, recursively
};

// BigQuery's schema limits ("Specifying a schema", the quotas page), checked while deriving so
// that a deep chain or a type reused at every level fails fast instead of growing without
// bound: RECORDs nest at most 15 levels (counted as ValidateTableSchema counts them), and a
// table has at most 10,000 columns, nested ones included.
constexpr std::size_t kMaxRecordDepth = 15;
constexpr std::size_t kMaxColumns = 10'000;

// protobuf's range for Duration (google/protobuf/duration.proto): about ±10,000 years.
constexpr std::int64_t kMaxDurationSeconds = 315'576'000'000;
constexpr std::int32_t kMaxNanos = 999'999'999;

absl::Status Refuse(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(fmt::format("field \"{}\": {}", path, what));
}

std::string KindName(const FieldDescriptor& f) {
  if (f.is_map()) return "map";
  if (f.message_type() != nullptr) return fmt::format("message {}", f.message_type()->full_name());
  return f.type_name();
}

// The nine wrappers of google/protobuf/wrappers.proto: the scalar each maps to.
std::optional<std::pair<FieldType, Conv>> WrapperType(const std::string& name) {
  static const auto* kWrappers = new std::map<std::string, std::pair<FieldType, Conv>>{
      {"google.protobuf.Int32Value", {FieldType::kInt64, Conv::kInt64}},
      {"google.protobuf.Int64Value", {FieldType::kInt64, Conv::kInt64}},
      {"google.protobuf.UInt32Value", {FieldType::kInt64, Conv::kUint32}},
      {"google.protobuf.UInt64Value", {FieldType::kInt64, Conv::kUint64}},
      {"google.protobuf.FloatValue", {FieldType::kFloat64, Conv::kFloat}},
      {"google.protobuf.DoubleValue", {FieldType::kFloat64, Conv::kDouble}},
      {"google.protobuf.BoolValue", {FieldType::kBool, Conv::kBool}},
      {"google.protobuf.StringValue", {FieldType::kString, Conv::kString}},
      {"google.protobuf.BytesValue", {FieldType::kBytes, Conv::kBytes}},
  };
  auto it = kWrappers->find(name);
  if (it == kWrappers->end()) return std::nullopt;
  return it->second;
}

bool IsJsonWellKnownType(const std::string& name) {
  return name == "google.protobuf.Struct" || name == "google.protobuf.Value" ||
         name == "google.protobuf.ListValue";
}

// Whether `d` is the same message definition as `other`: the same DescriptorProto (fields,
// numbers, types, labels, nested types), wherever each was built.
bool SameDefinition(const Descriptor& d, const Descriptor& other) {
  if (&d == &other) return true;
  google::protobuf::DescriptorProto a, b;
  d.CopyTo(&a);
  other.CopyTo(&b);
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

// A message named like one of protobuf's well-known types must be protobuf's own definition:
// its values are read by their known field layout.
absl::Status CheckWellKnown(const Descriptor& d, const std::string& path) {
  const Descriptor* own =
      google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(d.full_name());
  if (own != nullptr && SameDefinition(d, *own)) return absl::OkStatus();
  return Refuse(path, fmt::format("is a {} that is not protobuf's own definition of that "
                                  "well-known type (google/protobuf/*.proto)",
                                  d.full_name()));
}

}  // namespace

struct ProtoRowConverter::Column {
  const FieldDescriptor* field = nullptr;
  std::string path;
  Conv conv = Conv::kString;
  bool omit_empty = false;  // a marked string without presence: "" stays NULL
  bool required = false;    // unset fails the row (proto2 required, derive_required_columns)
  std::vector<Column> children;
};

namespace {

using Column = ProtoRowConverter::Column;

// Walks a descriptor into a table schema and the matching conversion plan.
class Deriver {
 public:
  explicit Deriver(const ProtoSchemaOptions& options) : options_(options) {}

  absl::Status Message(const Descriptor& d, const std::string& prefix,
                       std::vector<TableFieldSchema>& columns, std::vector<Column>& plan) {
    const std::string where = prefix.empty() ? d.full_name() : "\"" + prefix + "\"";
    if (d.field_count() == 0) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: message {} has no fields, and a BigQuery RECORD (or table) needs at least one "
          "column",
          where, d.full_name()));
    }
    if (stack_.size() >= kMaxRecordDepth) {
      return absl::InvalidArgumentError(
          fmt::format("{}: message {} nests RECORDs deeper than BigQuery's {} levels", where,
                      d.full_name(), kMaxRecordDepth));
    }
    if (std::find(stack_.begin(), stack_.end(), &d) != stack_.end()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: message {} contains itself, and a BigQuery schema cannot represent a "
                      "recursive type",
                      where, d.full_name()));
    }
    std::map<std::string, std::string> lowered;
    for (int i = 0; i < d.field_count(); ++i) {
      const std::string& name = d.field(i)->name();
      auto [it, fresh] = lowered.emplace(absl::AsciiStrToLower(name), name);
      if (!fresh) {
        return absl::InvalidArgumentError(fmt::format(
            "{}: fields \"{}\" and \"{}\" of {} differ only by case; the Storage Write API "
            "lowercases field names and cannot tell them apart",
            where, it->second, name, d.full_name()));
      }
    }
    stack_.push_back(&d);
    for (int i = 0; i < d.field_count(); ++i) {
      TableFieldSchema column;
      Column step;
      GCP_RETURN_IF_ERROR(Field(*d.field(i), prefix, column, step));
      columns.push_back(std::move(column));
      plan.push_back(std::move(step));
    }
    stack_.pop_back();
    return absl::OkStatus();
  }

  // Paths configured but never met.
  absl::Status CheckPathsMatched(const Descriptor& root) const {
    for (const auto* paths : {&options_.json_field_paths(), &options_.geography_field_paths()}) {
      for (const std::string& path : *paths) {
        if (!matched_.contains(path)) {
          for (const auto& [whole, what] : whole_) {
            if (absl::StartsWith(path, whole + ".")) {
              return absl::InvalidArgumentError(fmt::format(
                  "{} \"{}\" names a field inside \"{}\", which is {}; mark \"{}\" itself",
                  paths == &options_.json_field_paths() ? "jsonFieldPath" : "geographyFieldPath",
                  path, whole, what, whole));
            }
          }
          return absl::InvalidArgumentError(fmt::format(
              "{} \"{}\" matches no field of {} (paths are declared field names from the root "
              "message, joined by dots)",
              paths == &options_.json_field_paths() ? "jsonFieldPath" : "geographyFieldPath", path,
              root.full_name()));
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Field(const FieldDescriptor& f, const std::string& prefix, TableFieldSchema& column,
                     Column& step) {
    const std::string path = prefix.empty() ? f.name() : prefix + "." + f.name();
    if (++columns_ > kMaxColumns) {
      return Refuse(path, fmt::format("the derived schema has more than BigQuery's {} columns "
                                      "(nested ones included)",
                                      kMaxColumns));
    }
    column.name = f.name();
    step.field = &f;
    step.path = path;
    const bool derive = options_.derives_required_columns();
    const bool repeated = f.is_repeated();
    column.mode = repeated ? FieldMode::kRepeated : FieldMode::kNullable;

    bool json = ByPath(options_.json_field_paths(), path);
    bool geography = ByPath(options_.geography_field_paths(), path);
    GCP_ASSIGN_OR_RETURN(bool json_option, ByOption(f, path, options_.json_field_options()));
    GCP_ASSIGN_OR_RETURN(bool geo_option, ByOption(f, path, options_.geography_field_options()));
    json = json || json_option;
    geography = geography || geo_option;
    if (json && geography) {
      return Refuse(path,
                    "is marked both as a JSON and as a GEOGRAPHY column; a column has one "
                    "type");
    }
    const Descriptor* message = f.message_type();
    if (json || geography) {
      const bool string = f.type() == FieldDescriptor::TYPE_STRING;
      const bool json_message = json && message != nullptr && !f.is_map();
      if (!string && !json_message) {
        return Refuse(path, fmt::format("is a {}; only {} can be a {} column", KindName(f),
                                        json ? "a message (not a map) or a string" : "a string",
                                        json ? "JSON" : "GEOGRAPHY"));
      }
      column.type = json ? FieldType::kJson : FieldType::kGeography;
      step.conv = string ? Conv::kVerbatim : Conv::kJsonText;
      if (message != nullptr) whole_[path] = "written whole as a JSON column";
      step.omit_empty = string && !repeated && !f.has_presence();
      return absl::OkStatus();
    }
    // Message fields have presence: NULLABLE unless proto2 says `required`.
    step.required = derive && f.is_required();
    if (!repeated && step.required) column.mode = FieldMode::kRequired;
    if (message != nullptr) return MessageField(*message, path, column, step);
    if (!repeated && derive && !f.has_presence()) column.mode = FieldMode::kRequired;
    switch (f.cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
      case FieldDescriptor::CPPTYPE_INT64:
        return Set(column, step, FieldType::kInt64, Conv::kInt64);
      case FieldDescriptor::CPPTYPE_UINT32:
        return Set(column, step, FieldType::kInt64, Conv::kUint32);
      case FieldDescriptor::CPPTYPE_UINT64:
        return Set(column, step, FieldType::kInt64, Conv::kUint64);
      case FieldDescriptor::CPPTYPE_FLOAT:
        return Set(column, step, FieldType::kFloat64, Conv::kFloat);
      case FieldDescriptor::CPPTYPE_DOUBLE:
        return Set(column, step, FieldType::kFloat64, Conv::kDouble);
      case FieldDescriptor::CPPTYPE_BOOL:
        return Set(column, step, FieldType::kBool, Conv::kBool);
      case FieldDescriptor::CPPTYPE_ENUM:
        return Set(column, step, FieldType::kString, Conv::kEnum);
      case FieldDescriptor::CPPTYPE_STRING:
        return f.type() == FieldDescriptor::TYPE_BYTES
                   ? Set(column, step, FieldType::kBytes, Conv::kBytes)
                   : Set(column, step, FieldType::kString, Conv::kString);
      case FieldDescriptor::CPPTYPE_MESSAGE:
        break;
    }
    return Refuse(path, "has a type the converter does not know");
  }

  absl::Status MessageField(const Descriptor& message, const std::string& path,
                            TableFieldSchema& column, Column& step) {
    const std::string& name = message.full_name();
    if (name == "google.protobuf.Timestamp" || name == "google.protobuf.Duration" ||
        name == "google.protobuf.FieldMask" || IsJsonWellKnownType(name) ||
        WrapperType(name).has_value()) {
      GCP_RETURN_IF_ERROR(CheckWellKnown(message, path));
      whole_[path] = "the well-known type " + name;
    }
    if (name == "google.protobuf.Timestamp") {
      return Set(column, step, FieldType::kTimestamp, Conv::kTimestamp);
    }
    if (name == "google.protobuf.Duration") {
      return Set(column, step, FieldType::kInt64, Conv::kDuration);
    }
    if (name == "google.protobuf.FieldMask") {
      return Set(column, step, FieldType::kString, Conv::kFieldMask);
    }
    if (IsJsonWellKnownType(name)) return Set(column, step, FieldType::kJson, Conv::kJsonText);
    if (auto wrapper = WrapperType(name)) {
      Column value;
      value.field = message.FindFieldByNumber(1);
      value.path = path;
      value.conv = wrapper->second;
      if (value.field == nullptr) return Refuse(path, fmt::format("{} has no field 1", name));
      step.children.push_back(std::move(value));
      return Set(column, step, wrapper->first, Conv::kWrapper);
    }
    column.type = FieldType::kRecord;
    step.conv = Conv::kRecord;
    return Message(message, path, column.fields, step.children);
  }

  static absl::Status Set(TableFieldSchema& column, Column& step, FieldType type, Conv conv) {
    column.type = type;
    step.conv = conv;
    return absl::OkStatus();
  }

  bool ByPath(const std::set<std::string>& paths, const std::string& path) {
    if (!paths.contains(path)) return false;
    matched_.insert(path);
    return true;
  }

  // Whether one of `options` is set to true on `f`. The option is looked for in the serialized
  // field options, so it is found both as a resolved extension (generated code) and as an
  // unknown field (a descriptor built from a FileDescriptorSet without the annotations).
  absl::StatusOr<bool> ByOption(const FieldDescriptor& f, const std::string& path,
                                const std::map<int, ProtoSchemaOptions::FieldOption>& options) {
    if (options.empty()) return false;
    UnknownFieldSet wire;
    if (!wire.ParseFromString(f.options().SerializeAsString())) {
      return Refuse(path, "has field options that do not parse");
    }
    const google::protobuf::DescriptorPool* pool = f.file()->pool();
    const Descriptor* field_options = pool->FindMessageTypeByName("google.protobuf.FieldOptions");
    for (const auto& [number, option] : options) {
      std::vector<const UnknownField*> found;
      for (int i = 0; i < wire.field_count(); ++i) {
        if (wire.field(i).number() == number) found.push_back(&wire.field(i));
      }
      if (found.empty()) continue;
      const FieldDescriptor* declared =
          field_options == nullptr ? nullptr : pool->FindExtensionByNumber(field_options, number);
      if (declared != nullptr) {
        if (!option.full_name.empty() && declared->full_name() != option.full_name) continue;
        if (declared->type() != FieldDescriptor::TYPE_BOOL || declared->is_repeated()) {
          return Refuse(
              path, fmt::format("field option {} is declared as {} ({}{}), not a bool", number,
                                declared->full_name(), declared->is_repeated() ? "repeated " : "",
                                declared->type_name()));
        }
      }
      if (found.size() != 1 || found[0]->type() != UnknownField::TYPE_VARINT ||
          found[0]->varint() > 1) {
        const bool varint = found[0]->type() == UnknownField::TYPE_VARINT;
        return Refuse(path, fmt::format("field option {} is not encoded as a singular bool "
                                        "(found {} occurrence(s), the first {})",
                                        number, found.size(),
                                        varint ? fmt::format("a varint {}", found[0]->varint())
                                               : std::string("not a varint")));
      }
      if (found[0]->varint() == 1) return true;
    }
    return false;
  }

  const ProtoSchemaOptions& options_;
  std::vector<const Descriptor*> stack_;
  std::set<std::string> matched_;
  std::size_t columns_ = 0;
  // Message fields converted whole (JSON, well-known types) -> what they became.
  std::map<std::string, std::string> whole_;
};

using Value = std::variant<std::int64_t, double, bool, std::string>;

// Field 1 and 2 of Timestamp and Duration: seconds and nanos.
std::pair<std::int64_t, std::int32_t> SecondsAndNanos(const google::protobuf::Message& m) {
  const Reflection& r = *m.GetReflection();
  const Descriptor& d = *m.GetDescriptor();
  return {r.GetInt64(m, d.FindFieldByNumber(1)), r.GetInt32(m, d.FindFieldByNumber(2))};
}

absl::StatusOr<Value> TimestampMicros(const google::protobuf::Message& m, const std::string& path) {
  auto [seconds, nanos] = SecondsAndNanos(m);
  if (nanos < 0 || nanos > kMaxNanos) {
    return Refuse(path, fmt::format("Timestamp nanos {} is outside 0..999999999", nanos));
  }
  auto micros = wire::EncodeTimestamp(absl::FromUnixSeconds(seconds) + absl::Nanoseconds(nanos));
  if (!micros.ok()) return Refuse(path, std::string(micros.status().message()));
  return Value(*micros);
}

absl::StatusOr<Value> DurationMicros(const google::protobuf::Message& m, const std::string& path) {
  auto [seconds, nanos] = SecondsAndNanos(m);
  const bool in_range = seconds >= -kMaxDurationSeconds && seconds <= kMaxDurationSeconds &&
                        nanos >= -kMaxNanos && nanos <= kMaxNanos && !(seconds > 0 && nanos < 0) &&
                        !(seconds < 0 && nanos > 0);
  if (!in_range) {
    return Refuse(path, fmt::format("Duration {}s {}ns is outside protobuf's valid range (at "
                                    "most {} seconds either way, nanos of the same sign)",
                                    seconds, nanos, kMaxDurationSeconds));
  }
  return Value(seconds * 1'000'000 + nanos / 1'000);
}

absl::StatusOr<Value> Utf8(std::string s, const std::string& path) {
  if (auto bad = util::InvalidUtf8At(s)) {
    return Refuse(path, fmt::format("invalid UTF-8 at byte {}", *bad));
  }
  return Value(std::move(s));
}

// What the JSON printer would otherwise get wrong silently, refused instead: invalid UTF-8 in a
// string (the printer drops the bytes), a google.protobuf.Value with no kind (printed as
// nothing, which is not JSON) or a non-finite number (printed as a string, where protobuf's JSON
// mapping calls it an error), and nesting deeper than protobuf's own parse limit (100).
absl::Status CheckJsonInput(const google::protobuf::Message& m, const std::string& path,
                            int depth = 0) {
  constexpr int kMaxJsonDepth = 100;
  if (depth > kMaxJsonDepth) {
    return Refuse(path, fmt::format("the message nests deeper than {} levels", kMaxJsonDepth));
  }
  const Reflection& r = *m.GetReflection();
  const Descriptor& d = *m.GetDescriptor();
  std::vector<const FieldDescriptor*> fields;
  r.ListFields(m, &fields);
  if (d.full_name() == "google.protobuf.Value") {
    if (fields.empty()) return Refuse(path, "a google.protobuf.Value has no kind set (not JSON)");
    const FieldDescriptor* number = d.FindFieldByName("number_value");
    if (number != nullptr && r.HasField(m, number) && !std::isfinite(r.GetDouble(m, number))) {
      return Refuse(path, "a google.protobuf.Value holds NaN or an infinity, which JSON cannot");
    }
  }
  for (const FieldDescriptor* f : fields) {
    const int n = f->is_repeated() ? r.FieldSize(m, f) : 1;
    for (int i = 0; i < n; ++i) {
      if (f->type() == FieldDescriptor::TYPE_STRING) {
        std::string scratch;
        const std::string& v = f->is_repeated() ? r.GetRepeatedStringReference(m, f, i, &scratch)
                                                : r.GetStringReference(m, f, &scratch);
        if (auto bad = util::InvalidUtf8At(v)) {
          return Refuse(path,
                        fmt::format("{} holds invalid UTF-8 at byte {}", f->full_name(), *bad));
        }
      } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        const google::protobuf::Message& sub =
            f->is_repeated() ? r.GetRepeatedMessage(m, f, i) : r.GetMessage(m, f);
        GCP_RETURN_IF_ERROR(CheckJsonInput(sub, path, depth + 1));
      }
    }
  }
  return absl::OkStatus();
}

// One value of a non-RECORD column, or nothing for a column left NULL.
absl::StatusOr<std::optional<Value>> Read(const Column& c, const google::protobuf::Message& m,
                                          int index) {
  const Reflection& r = *m.GetReflection();
  const FieldDescriptor* f = c.field;
  const bool rep = index >= 0;
  switch (c.conv) {
    case Conv::kInt64:
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT32) {
        return Value(std::int64_t{rep ? r.GetRepeatedInt32(m, f, index) : r.GetInt32(m, f)});
      }
      return Value(std::int64_t{rep ? r.GetRepeatedInt64(m, f, index) : r.GetInt64(m, f)});
    case Conv::kUint32:
      return Value(std::int64_t{rep ? r.GetRepeatedUInt32(m, f, index) : r.GetUInt32(m, f)});
    case Conv::kUint64: {
      std::uint64_t v = rep ? r.GetRepeatedUInt64(m, f, index) : r.GetUInt64(m, f);
      if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return Refuse(c.path, fmt::format("{} is above INT64's maximum {}", v,
                                          std::numeric_limits<std::int64_t>::max()));
      }
      return Value(static_cast<std::int64_t>(v));
    }
    case Conv::kFloat:
      return Value(double{rep ? r.GetRepeatedFloat(m, f, index) : r.GetFloat(m, f)});
    case Conv::kDouble:
      return Value(rep ? r.GetRepeatedDouble(m, f, index) : r.GetDouble(m, f));
    case Conv::kBool:
      return Value(rep ? r.GetRepeatedBool(m, f, index) : r.GetBool(m, f));
    case Conv::kBytes:
      return Value(rep ? r.GetRepeatedString(m, f, index) : r.GetString(m, f));
    case Conv::kString:
      return Utf8(rep ? r.GetRepeatedString(m, f, index) : r.GetString(m, f), c.path);
    case Conv::kVerbatim: {
      std::string s = rep ? r.GetRepeatedString(m, f, index) : r.GetString(m, f);
      if (c.omit_empty && s.empty()) return std::optional<Value>();
      return Utf8(std::move(s), c.path);
    }
    case Conv::kEnum:
      return Value(std::string((rep ? r.GetRepeatedEnum(m, f, index) : r.GetEnum(m, f))->name()));
    case Conv::kRecord:
      break;
    default: {
      const google::protobuf::Message& sub =
          rep ? r.GetRepeatedMessage(m, f, index) : r.GetMessage(m, f);
      switch (c.conv) {
        case Conv::kTimestamp:
          return TimestampMicros(sub, c.path);
        case Conv::kDuration:
          return DurationMicros(sub, c.path);
        case Conv::kFieldMask: {
          const FieldDescriptor* paths = sub.GetDescriptor()->FindFieldByNumber(1);
          const Reflection& sr = *sub.GetReflection();
          std::vector<std::string> parts;
          for (int i = 0; i < sr.FieldSize(sub, paths); ++i) {
            parts.push_back(sr.GetRepeatedString(sub, paths, i));
          }
          return Utf8(absl::StrJoin(parts, ","), c.path);
        }
        case Conv::kWrapper:
          return Read(c.children[0], sub, -1);
        case Conv::kJsonText: {
          GCP_RETURN_IF_ERROR(CheckJsonInput(sub, c.path));
          std::string json;
          auto printed = google::protobuf::util::MessageToJsonString(sub, &json);
          if (!printed.ok()) {
            return Refuse(c.path, fmt::format("the JSON printer refused the {}: {}",
                                              sub.GetDescriptor()->full_name(),
                                              std::string(printed.message())));
          }
          if (json.empty()) return Refuse(c.path, "the JSON printer produced nothing");
          return Value(std::move(json));
        }
        default:
          break;
      }
    }
  }
  return Refuse(c.path, "has no value conversion");
}

void Write(Value v, google::protobuf::Message& out, const FieldDescriptor* of, bool repeated) {
  const Reflection& r = *out.GetReflection();
  std::visit(
      [&](auto&& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::int64_t>) {
          repeated ? r.AddInt64(&out, of, x) : r.SetInt64(&out, of, x);
        } else if constexpr (std::is_same_v<X, double>) {
          repeated ? r.AddDouble(&out, of, x) : r.SetDouble(&out, of, x);
        } else if constexpr (std::is_same_v<X, bool>) {
          repeated ? r.AddBool(&out, of, x) : r.SetBool(&out, of, x);
        } else {
          repeated ? r.AddString(&out, of, std::move(x)) : r.SetString(&out, of, std::move(x));
        }
      },
      std::move(v));
}

absl::Status Fill(const google::protobuf::Message& m, const std::vector<Column>& plan,
                  google::protobuf::Message& out);

absl::Status Put(const Column& c, const google::protobuf::Message& m, int index,
                 google::protobuf::Message& out, const FieldDescriptor* of) {
  const bool rep = index >= 0;
  if (c.conv == Conv::kRecord) {
    const Reflection& r = *m.GetReflection();
    const google::protobuf::Message& sub =
        rep ? r.GetRepeatedMessage(m, c.field, index) : r.GetMessage(m, c.field);
    const Reflection& o = *out.GetReflection();
    return Fill(sub, c.children, rep ? *o.AddMessage(&out, of) : *o.MutableMessage(&out, of));
  }
  GCP_ASSIGN_OR_RETURN(std::optional<Value> v, Read(c, m, index));
  if (v.has_value()) Write(std::move(*v), out, of, rep);
  return absl::OkStatus();
}

absl::Status Fill(const google::protobuf::Message& m, const std::vector<Column>& plan,
                  google::protobuf::Message& out) {
  const Reflection& r = *m.GetReflection();
  const Descriptor& od = *out.GetDescriptor();
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const Column& c = plan[i];
    const FieldDescriptor* of = od.field(static_cast<int>(i));
    if (c.field->is_repeated()) {
      const int n = r.FieldSize(m, c.field);
      for (int k = 0; k < n; ++k) GCP_RETURN_IF_ERROR(Put(c, m, k, out, of));
      continue;
    }
    if (c.field->has_presence() && !r.HasField(m, c.field)) {
      if (c.required) return Refuse(c.path, "is required (a REQUIRED column) and unset");
      continue;
    }
    GCP_RETURN_IF_ERROR(Put(c, m, -1, out, of));
  }
  return absl::OkStatus();
}

}  // namespace

ProtoRowConverter::~ProtoRowConverter() = default;

absl::StatusOr<std::unique_ptr<ProtoRowConverter>> ProtoRowConverter::Create(
    const Descriptor* descriptor, ProtoSchemaOptions options) {
  if (descriptor == nullptr) return absl::InvalidArgumentError("no message descriptor given");
  GCP_RETURN_IF_ERROR(options.validate());
  std::unique_ptr<ProtoRowConverter> c(new ProtoRowConverter());
  c->descriptor_ = descriptor;
  c->options_ = std::move(options);
  c->plan_ = std::make_unique<std::vector<Column>>();
  TableSchema schema;
  Deriver deriver(c->options_);
  GCP_RETURN_IF_ERROR(deriver.Message(*descriptor, "", schema.fields, *c->plan_));
  GCP_RETURN_IF_ERROR(deriver.CheckPathsMatched(*descriptor));
  auto row_type = WriterRowType::Create(schema);
  if (!row_type.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("the schema derived from {} is not a valid "
                    "BigQuery schema: {}",
                    descriptor->full_name(), row_type.status().message()));
  }
  c->row_type_ = std::move(*row_type);
  return c;
}

bool ProtoRowConverter::SameForeignDefinition(const Descriptor& other) const {
  std::lock_guard lock(foreign_mu_);
  auto [it, fresh] = foreign_.emplace(&other, false);
  if (fresh) it->second = SameDefinition(other, *descriptor_);
  return it->second;
}

const TableSchema& ProtoRowConverter::schema() const { return row_type_->schema(); }

const google::protobuf::DescriptorProto& ProtoRowConverter::writer_descriptor() const {
  return row_type_->proto();
}

absl::StatusOr<std::string> ProtoRowConverter::encode(const google::protobuf::Message& m) const {
  const google::protobuf::Message* source = &m;
  std::unique_ptr<google::protobuf::Message> copy;
  if (m.GetDescriptor() != descriptor_) {
    if (m.GetDescriptor()->full_name() != descriptor_->full_name()) {
      return absl::InvalidArgumentError(fmt::format("expected a {} message, got a {}",
                                                    descriptor_->full_name(),
                                                    m.GetDescriptor()->full_name()));
    }
    if (!SameForeignDefinition(*m.GetDescriptor())) {
      return absl::InvalidArgumentError(fmt::format(
          "the {} message comes from a descriptor pool whose definition of that type differs "
          "from the configured one (its fields would be misread)",
          descriptor_->full_name()));
    }
    const Message* prototype =
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor_);
    if (prototype == nullptr) prototype = dynamic_factory_.GetPrototype(descriptor_);
    copy.reset(prototype->New());
    if (!copy->ParsePartialFromString(m.SerializePartialAsString())) {
      return absl::InvalidArgumentError(fmt::format(
          "the {} message (from another descriptor pool) does not parse as the configured type",
          descriptor_->full_name()));
    }
    source = copy.get();
  }
  std::unique_ptr<google::protobuf::Message> row = row_type_->NewRow();
  GCP_RETURN_IF_ERROR(Fill(*source, *plan_, *row));
  return row->SerializePartialAsString();
}

}  // namespace gcpstream::bigquery
