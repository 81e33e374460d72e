#include "gcpstream/bigquery/schema/table_schema.h"

#include <fmt/format.h>

#include <array>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"

namespace gcpstream::bigquery {
namespace {

namespace storage = google::cloud::bigquery::storage::v1;

// "Specifying a schema": column names up to 300 characters; RECORDs nest up to 15 levels.
constexpr std::size_t kMaxColumnNameChars = 300;
constexpr int kMaxRecordDepth = 15;
constexpr std::size_t kMaxColumns = 10000;

struct TypeName {
  std::string_view name;
  FieldType type;
};
constexpr std::array<TypeName, 21> kTypeNames{{
    {"STRING", FieldType::kString},
    {"BYTES", FieldType::kBytes},
    {"INT64", FieldType::kInt64},
    {"INTEGER", FieldType::kInt64},
    {"FLOAT64", FieldType::kFloat64},
    {"FLOAT", FieldType::kFloat64},
    {"NUMERIC", FieldType::kNumeric},
    {"BIGNUMERIC", FieldType::kBigNumeric},
    {"BIGDECIMAL", FieldType::kBigNumeric},
    {"BOOL", FieldType::kBool},
    {"BOOLEAN", FieldType::kBool},
    {"TIMESTAMP", FieldType::kTimestamp},
    {"DATE", FieldType::kDate},
    {"TIME", FieldType::kTime},
    {"DATETIME", FieldType::kDatetime},
    {"GEOGRAPHY", FieldType::kGeography},
    {"JSON", FieldType::kJson},
    {"INTERVAL", FieldType::kInterval},
    {"RECORD", FieldType::kRecord},
    {"STRUCT", FieldType::kRecord},
    {"DECIMAL", FieldType::kNumeric},
}};

absl::Status ValidateLevel(const std::vector<TableFieldSchema>& fields, int depth,
                           const std::string& prefix) {
  std::set<std::string> seen;
  for (const auto& f : fields) {
    const std::string path = prefix + f.name;
    if (f.name.empty() || f.name.size() > kMaxColumnNameChars) {
      return absl::InvalidArgumentError(
          fmt::format("column \"{}\": a name has 1 to {} characters", path, kMaxColumnNameChars));
    }
    // "Column names": these prefixes are reserved, case-insensitively.
    for (const char* reserved :
         {"_table_", "_file_", "_partition", "_row_timestamp", "__root__", "_colon_"}) {
      if (absl::StartsWith(absl::AsciiStrToLower(f.name), reserved)) {
        return absl::InvalidArgumentError(fmt::format(
            "column \"{}\": names starting with {} are reserved by BigQuery", path, reserved));
      }
    }
    if (!seen.insert(absl::AsciiStrToLower(f.name)).second) {
      return absl::InvalidArgumentError(fmt::format(
          "column \"{}\" appears twice (BigQuery compares names case-insensitively)", path));
    }
    if (f.max_length < 0 ||
        (f.max_length > 0 && f.type != FieldType::kString && f.type != FieldType::kBytes)) {
      return absl::InvalidArgumentError(fmt::format(
          "column \"{}\": maxLength applies to STRING and BYTES only, and is >= 0", path));
    }
    if (f.type == FieldType::kRecord) {
      if (f.fields.empty()) {
        return absl::InvalidArgumentError(
            fmt::format("column \"{}\" is a RECORD without sub-columns", path));
      }
      if (depth >= kMaxRecordDepth) {
        return absl::InvalidArgumentError(fmt::format(
            "column \"{}\" nests RECORDs deeper than BigQuery's {} levels", path, kMaxRecordDepth));
      }
      if (absl::Status s = ValidateLevel(f.fields, depth + 1, path + "."); !s.ok()) return s;
    } else if (!f.fields.empty()) {
      return absl::InvalidArgumentError(
          fmt::format("column \"{}\" has sub-columns but is not a RECORD", path));
    }
  }
  return absl::OkStatus();
}

absl::Status FieldsFromJson(const nlohmann::json& fields, const std::string& prefix, int depth,
                            std::vector<TableFieldSchema>& out) {
  if (!fields.is_array()) {
    return absl::InvalidArgumentError(fmt::format("{}fields: expected an array", prefix));
  }
  if (depth > kMaxRecordDepth) {
    return absl::InvalidArgumentError(
        fmt::format("{}: RECORDs nest deeper than {} levels", prefix, kMaxRecordDepth));
  }
  for (const auto& j : fields) {
    if (!j.is_object()) {
      return absl::InvalidArgumentError(fmt::format("{}fields: expected objects", prefix));
    }
    TableFieldSchema f;
    auto text = [&](const char* key) -> std::string {
      auto it = j.find(key);
      return it != j.end() && it->is_string() ? it->get<std::string>() : "";
    };
    f.name = text("name");
    const std::string path = prefix + f.name;
    auto type = ParseFieldType(text("type"));
    if (!type.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("column \"{}\": {}", path, std::string(type.status().message())));
    }
    f.type = *type;
    const std::string mode = absl::AsciiStrToUpper(text("mode"));
    if (mode.empty() || mode == "NULLABLE") {
      f.mode = FieldMode::kNullable;
    } else if (mode == "REQUIRED") {
      f.mode = FieldMode::kRequired;
    } else if (mode == "REPEATED") {
      f.mode = FieldMode::kRepeated;
    } else {
      return absl::InvalidArgumentError(
          fmt::format("column \"{}\": unknown mode \"{}\"", path, mode));
    }
    f.description = text("description");
    if (auto it = j.find("maxLength"); it != j.end()) {
      const bool ok =
          (it->is_string() && absl::SimpleAtoi(it->get<std::string>(), &f.max_length)) ||
          (it->is_number_integer() && (f.max_length = it->get<std::int64_t>(), true));
      if (!ok) {
        return absl::InvalidArgumentError(fmt::format("column \"{}\": invalid maxLength", path));
      }
    }
    if (auto it = j.find("fields"); it != j.end()) {
      if (absl::Status s = FieldsFromJson(*it, path + ".", depth + 1, f.fields); !s.ok()) return s;
    }
    out.push_back(std::move(f));
  }
  return absl::OkStatus();
}

nlohmann::json FieldsToJson(const std::vector<TableFieldSchema>& fields) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : fields) {
    nlohmann::json j = {{"name", f.name},
                        {"type", std::string(FieldTypeName(f.type))},
                        {"mode", std::string(FieldModeName(f.mode))}};
    if (f.max_length > 0) j["maxLength"] = std::to_string(f.max_length);
    if (!f.description.empty()) j["description"] = f.description;
    if (!f.fields.empty()) j["fields"] = FieldsToJson(f.fields);
    out.push_back(std::move(j));
  }
  return out;
}

absl::Status FieldsFromStorage(
    const google::protobuf::RepeatedPtrField<storage::TableFieldSchema>& fields,
    std::vector<TableFieldSchema>& out) {
  using T = storage::TableFieldSchema;
  for (const auto& s : fields) {
    TableFieldSchema f;
    f.name = s.name();
    switch (s.type()) {
      case T::STRING:
        f.type = FieldType::kString;
        break;
      case T::INT64:
        f.type = FieldType::kInt64;
        break;
      case T::DOUBLE:
        f.type = FieldType::kFloat64;
        break;
      case T::STRUCT:
        f.type = FieldType::kRecord;
        break;
      case T::BYTES:
        f.type = FieldType::kBytes;
        break;
      case T::BOOL:
        f.type = FieldType::kBool;
        break;
      case T::TIMESTAMP:
        f.type = FieldType::kTimestamp;
        break;
      case T::DATE:
        f.type = FieldType::kDate;
        break;
      case T::TIME:
        f.type = FieldType::kTime;
        break;
      case T::DATETIME:
        f.type = FieldType::kDatetime;
        break;
      case T::GEOGRAPHY:
        f.type = FieldType::kGeography;
        break;
      case T::NUMERIC:
        f.type = FieldType::kNumeric;
        break;
      case T::BIGNUMERIC:
        f.type = FieldType::kBigNumeric;
        break;
      case T::INTERVAL:
        f.type = FieldType::kInterval;
        break;
      case T::JSON:
        f.type = FieldType::kJson;
        break;
      default:
        return absl::InvalidArgumentError(fmt::format("column \"{}\": type {} is not supported",
                                                      s.name(), T::Type_Name(s.type())));
    }
    f.mode = s.mode() == T::REQUIRED   ? FieldMode::kRequired
             : s.mode() == T::REPEATED ? FieldMode::kRepeated
                                       : FieldMode::kNullable;
    f.max_length = s.max_length();
    f.description = s.description();
    if (absl::Status st = FieldsFromStorage(s.fields(), f.fields); !st.ok()) return st;
    out.push_back(std::move(f));
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view FieldTypeName(FieldType type) {
  switch (type) {
    case FieldType::kString:
      return "STRING";
    case FieldType::kBytes:
      return "BYTES";
    case FieldType::kInt64:
      return "INT64";
    case FieldType::kFloat64:
      return "FLOAT64";
    case FieldType::kNumeric:
      return "NUMERIC";
    case FieldType::kBigNumeric:
      return "BIGNUMERIC";
    case FieldType::kBool:
      return "BOOL";
    case FieldType::kTimestamp:
      return "TIMESTAMP";
    case FieldType::kDate:
      return "DATE";
    case FieldType::kTime:
      return "TIME";
    case FieldType::kDatetime:
      return "DATETIME";
    case FieldType::kGeography:
      return "GEOGRAPHY";
    case FieldType::kJson:
      return "JSON";
    case FieldType::kInterval:
      return "INTERVAL";
    case FieldType::kRecord:
      return "RECORD";
  }
  return "UNKNOWN";
}

std::string_view FieldModeName(FieldMode mode) {
  switch (mode) {
    case FieldMode::kNullable:
      return "NULLABLE";
    case FieldMode::kRequired:
      return "REQUIRED";
    case FieldMode::kRepeated:
      return "REPEATED";
  }
  return "NULLABLE";
}

absl::StatusOr<FieldType> ParseFieldType(std::string_view name) {
  const std::string upper = absl::AsciiStrToUpper(std::string(name));
  for (const auto& t : kTypeNames) {
    if (t.name == upper) return t.type;
  }
  return absl::InvalidArgumentError(fmt::format("unknown BigQuery type \"{}\"", name));
}

namespace {
std::size_t CountColumns(const std::vector<TableFieldSchema>& fields) {
  std::size_t n = fields.size();
  for (const auto& f : fields) n += CountColumns(f.fields);
  return n;
}
}  // namespace

absl::Status ValidateTableSchema(const TableSchema& schema) {
  // Quotas: a table schema has at most 10,000 columns, nested ones included.
  if (const std::size_t n = CountColumns(schema.fields); n > kMaxColumns) {
    return absl::InvalidArgumentError(
        fmt::format("the schema has {} columns; BigQuery allows at most {}", n, kMaxColumns));
  }
  if (schema.fields.empty()) {
    return absl::InvalidArgumentError("the schema has no columns");
  }
  return ValidateLevel(schema.fields, 1, "");
}

absl::StatusOr<TableSchema> TableSchemaFromJson(const nlohmann::json& fields) {
  TableSchema schema;
  if (absl::Status s = FieldsFromJson(fields, "", 1, schema.fields); !s.ok()) return s;
  if (absl::Status s = ValidateTableSchema(schema); !s.ok()) return s;
  return schema;
}

nlohmann::json TableSchemaToJson(const TableSchema& schema) { return FieldsToJson(schema.fields); }

absl::StatusOr<TableSchema> TableSchemaFromStorage(const storage::TableSchema& schema) {
  TableSchema out;
  if (absl::Status s = FieldsFromStorage(schema.fields(), out.fields); !s.ok()) return s;
  return out;
}

}  // namespace gcpstream::bigquery
