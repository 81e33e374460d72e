#include "tests/fakes/bigquery/fake_table_schema.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"

namespace gcpstream::testing::bigquery_fake {
namespace {

namespace storage = google::cloud::bigquery::storage::v1;

// Documented limits: column names up to 300 characters, RECORD nesting up to 15 levels.
constexpr std::size_t kMaxNameChars = 300;
constexpr int kMaxDepth = 15;

const std::map<std::string, std::string>& TypeNames() {
  static const auto* names = new std::map<std::string, std::string>{{"INTEGER", "INT64"},
                                                                    {"INT64", "INT64"},
                                                                    {"FLOAT", "FLOAT64"},
                                                                    {"FLOAT64", "FLOAT64"},
                                                                    {"NUMERIC", "NUMERIC"},
                                                                    {"BIGNUMERIC", "BIGNUMERIC"},
                                                                    {"BIGDECIMAL", "BIGNUMERIC"},
                                                                    {"BOOLEAN", "BOOL"},
                                                                    {"BOOL", "BOOL"},
                                                                    {"STRING", "STRING"},
                                                                    {"BYTES", "BYTES"},
                                                                    {"DATE", "DATE"},
                                                                    {"DATETIME", "DATETIME"},
                                                                    {"TIME", "TIME"},
                                                                    {"TIMESTAMP", "TIMESTAMP"},
                                                                    {"JSON", "JSON"},
                                                                    {"GEOGRAPHY", "GEOGRAPHY"},
                                                                    {"INTERVAL", "INTERVAL"},
                                                                    {"RANGE", "RANGE"},
                                                                    {"RECORD", "RECORD"},
                                                                    {"STRUCT", "RECORD"}};
  return *names;
}

absl::Status ParseLevel(const nlohmann::json& fields, int depth, const std::string& path,
                        Schema& out) {
  if (!fields.is_array()) {
    return absl::InvalidArgumentError(fmt::format("{}fields must be an array", path));
  }
  if (depth > kMaxDepth) {
    return absl::InvalidArgumentError(
        fmt::format("Field {} nests RECORDs deeper than {} levels", path, kMaxDepth));
  }
  std::set<std::string> seen;
  for (const auto& f : fields) {
    if (!f.is_object() || !f.contains("name") || !f["name"].is_string()) {
      return absl::InvalidArgumentError(fmt::format("{}a field has no name", path));
    }
    Field field;
    field.name = f["name"].get<std::string>();
    if (field.name.empty() || field.name.size() > kMaxNameChars) {
      return absl::InvalidArgumentError(fmt::format(
          "Invalid field name \"{}\" at {}: 1 to {} characters", field.name, path, kMaxNameChars));
    }
    if (!seen.insert(absl::AsciiStrToLower(field.name)).second) {
      return absl::InvalidArgumentError(
          fmt::format("Field {}{} is specified more than once", path, field.name));
    }
    const std::string type = absl::AsciiStrToUpper(
        f.contains("type") && f["type"].is_string() ? f["type"].get<std::string>() : "");
    auto known = TypeNames().find(type);
    if (known == TypeNames().end()) {
      return absl::InvalidArgumentError(
          fmt::format("Field {}{} has an unknown type \"{}\"", path, field.name, type));
    }
    field.type = known->second;
    field.mode = absl::AsciiStrToUpper(
        f.contains("mode") && f["mode"].is_string() ? f["mode"].get<std::string>() : "NULLABLE");
    if (field.mode != "NULLABLE" && field.mode != "REQUIRED" && field.mode != "REPEATED") {
      return absl::InvalidArgumentError(
          fmt::format("Field {}{} has an unknown mode \"{}\"", path, field.name, field.mode));
    }
    if (f.contains("maxLength")) {
      const auto& m = f["maxLength"];
      // The REST API writes int64 values as strings.
      const bool parsed =
          (m.is_string() && absl::SimpleAtoi(m.get<std::string>(), &field.max_length)) ||
          (m.is_number_integer() && (field.max_length = m.get<std::int64_t>(), true));
      if (!parsed || field.max_length < 0) {
        return absl::InvalidArgumentError(
            fmt::format("Field {}{} has an invalid maxLength", path, field.name));
      }
    }
    const bool has_sub = f.contains("fields") && !f["fields"].empty();
    if (field.type == "RECORD") {
      if (!has_sub) {
        return absl::InvalidArgumentError(
            fmt::format("Field {}{} is type RECORD but has no schema", path, field.name));
      }
      if (absl::Status s =
              ParseLevel(f["fields"], depth + 1, path + field.name + ".", field.fields);
          !s.ok()) {
        return s;
      }
    } else if (has_sub) {
      return absl::InvalidArgumentError(
          fmt::format("Field {}{} is not a RECORD but has sub-fields", path, field.name));
    }
    out.push_back(std::move(field));
  }
  return absl::OkStatus();
}

storage::TableFieldSchema::Type StorageType(const std::string& type) {
  using T = storage::TableFieldSchema;
  static const auto* types =
      new std::map<std::string, T::Type>{{"INT64", T::INT64},         {"FLOAT64", T::DOUBLE},
                                         {"NUMERIC", T::NUMERIC},     {"BIGNUMERIC", T::BIGNUMERIC},
                                         {"BOOL", T::BOOL},           {"STRING", T::STRING},
                                         {"BYTES", T::BYTES},         {"DATE", T::DATE},
                                         {"DATETIME", T::DATETIME},   {"TIME", T::TIME},
                                         {"TIMESTAMP", T::TIMESTAMP}, {"JSON", T::JSON},
                                         {"GEOGRAPHY", T::GEOGRAPHY}, {"INTERVAL", T::INTERVAL},
                                         {"RANGE", T::RANGE},         {"RECORD", T::STRUCT}};
  auto it = types->find(type);
  return it == types->end() ? T::TYPE_UNSPECIFIED : it->second;
}

void AddStorageFields(const Schema& schema,
                      google::protobuf::RepeatedPtrField<storage::TableFieldSchema>* out) {
  for (const auto& f : schema) {
    auto* s = out->Add();
    s->set_name(f.name);
    s->set_type(StorageType(f.type));
    s->set_mode(f.mode == "REQUIRED"   ? storage::TableFieldSchema::REQUIRED
                : f.mode == "REPEATED" ? storage::TableFieldSchema::REPEATED
                                       : storage::TableFieldSchema::NULLABLE);
    if (f.max_length > 0) s->set_max_length(f.max_length);
    AddStorageFields(f.fields, s->mutable_fields());
  }
}

absl::Status WideningAt(const Schema& current, const Schema& next, const std::string& path) {
  for (const auto& old : current) {
    const Field* now = FindField(next, old.name);
    if (now == nullptr) {
      return absl::InvalidArgumentError(
          fmt::format("Provided Schema does not match Table. Field {}{} is missing in new schema",
                      path, old.name));
    }
    if (now->type != old.type) {
      return absl::InvalidArgumentError(
          fmt::format("Provided Schema does not match Table. Field {}{} has changed type from {} "
                      "to {}",
                      path, old.name, old.type, now->type));
    }
    const bool relax = old.mode == "REQUIRED" && now->mode == "NULLABLE";
    if (now->mode != old.mode && !relax) {
      return absl::InvalidArgumentError(
          fmt::format("Provided Schema does not match Table. Field {}{} has changed mode from {} "
                      "to {}",
                      path, old.name, old.mode, now->mode));
    }
    if (old.type == "RECORD") {
      if (absl::Status s = WideningAt(old.fields, now->fields, path + old.name + "."); !s.ok()) {
        return s;
      }
    }
  }
  for (const auto& added : next) {
    if (FindField(current, added.name) == nullptr && added.mode == "REQUIRED") {
      return absl::InvalidArgumentError(
          fmt::format("Provided Schema does not match Table. Cannot add required field {}{}", path,
                      added.name));
    }
  }
  return absl::OkStatus();
}

}  // namespace

namespace {
std::size_t CountColumns(const Schema& schema) {
  std::size_t n = schema.size();
  for (const auto& f : schema) n += CountColumns(f.fields);
  return n;
}
}  // namespace

absl::StatusOr<Schema> ParseSchema(const nlohmann::json& fields) {
  Schema schema;
  if (absl::Status s = ParseLevel(fields, 1, "", schema); !s.ok()) return s;
  // Quotas: at most 10,000 columns in a table schema, nested ones included.
  if (const std::size_t n = CountColumns(schema); n > 10000) {
    return absl::InvalidArgumentError(
        fmt::format("Too many columns: {}; a table has at most 10000", n));
  }
  return schema;
}

nlohmann::json ToJson(const Schema& schema) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : schema) {
    // tables.get shows the legacy names for the types that have one.
    static const auto* legacy = new std::map<std::string, std::string>{
        {"INT64", "INTEGER"}, {"FLOAT64", "FLOAT"}, {"BOOL", "BOOLEAN"}};
    auto l = legacy->find(f.type);
    nlohmann::json j = {
        {"name", f.name}, {"type", l == legacy->end() ? f.type : l->second}, {"mode", f.mode}};
    if (f.max_length > 0) j["maxLength"] = std::to_string(f.max_length);
    if (!f.fields.empty()) j["fields"] = ToJson(f.fields);
    out.push_back(std::move(j));
  }
  return out;
}

google::cloud::bigquery::storage::v1::TableSchema ToStorageSchema(const Schema& schema) {
  storage::TableSchema out;
  AddStorageFields(schema, out.mutable_fields());
  return out;
}

absl::Status CheckWidening(const Schema& current, const Schema& next) {
  return WideningAt(current, next, "");
}

const Field* FindField(const Schema& schema, const std::string& name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const auto& f : schema) {
    if (absl::AsciiStrToLower(f.name) == lower) return &f;
  }
  return nullptr;
}

}  // namespace gcpstream::testing::bigquery_fake
