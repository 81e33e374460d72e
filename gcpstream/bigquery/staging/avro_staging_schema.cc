#include "gcpstream/bigquery/staging/avro_staging_schema.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace gcpstream::bigquery::staging {
namespace {

using nlohmann::json;

bool IsAvroName(const std::string& name) {
  if (name.empty() || absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

class Builder {
 public:
  absl::StatusOr<json> Record(const std::vector<TableFieldSchema>& fields, const std::string& name,
                              const std::string& path) {
    json out = {{"type", "record"}, {"name", name}, {"fields", json::array()}};
    for (const TableFieldSchema& f : fields) {
      const std::string child = path.empty() ? f.name : absl::StrCat(path, ".", f.name);
      if (!IsAvroName(f.name)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "column ", child,
            ": FILE_LOADS stages Avro, whose field names are letters, digits and underscores "
            "not starting with a digit; use a Storage Write API method for flexible column "
            "names"));
      }
      auto type = Element(f, child);
      if (!type.ok()) return type.status();
      json t = *std::move(type);
      if (f.mode == FieldMode::kRepeated) {
        t = {{"type", "array"}, {"items", std::move(t)}};
      } else if (f.mode == FieldMode::kNullable) {
        t = json::array({"null", std::move(t)});
      }
      out["fields"].push_back({{"name", f.name}, {"type", std::move(t)}});
    }
    return out;
  }

 private:
  absl::StatusOr<json> Element(const TableFieldSchema& f, const std::string& path) {
    switch (f.type) {
      case FieldType::kString:
        return json("string");
      case FieldType::kBytes:
        return json("bytes");
      case FieldType::kInt64:
        return json("long");
      case FieldType::kFloat64:
        return json("double");
      case FieldType::kBool:
        return json("boolean");
      case FieldType::kNumeric:
        return json{{"type", "bytes"}, {"logicalType", "decimal"}, {"precision", 38}, {"scale", 9}};
      case FieldType::kBigNumeric:
        return json{
            {"type", "bytes"}, {"logicalType", "decimal"}, {"precision", 77}, {"scale", 38}};
      case FieldType::kTimestamp:
        return json{{"type", "long"}, {"logicalType", "timestamp-micros"}};
      case FieldType::kDate:
        return json{{"type", "int"}, {"logicalType", "date"}};
      case FieldType::kTime:
        return json{{"type", "long"}, {"logicalType", "time-micros"}};
      case FieldType::kDatetime:
        return json{{"type", "long"}, {"logicalType", "local-timestamp-micros"}};
      case FieldType::kJson:
        return json{{"type", "string"}, {"sqlType", "JSON"}};
      case FieldType::kGeography:
        return json{{"type", "string"}, {"sqlType", "GEOGRAPHY"}};
      case FieldType::kRecord:
        return Record(f.fields, absl::StrCat("__record_", ++records_), path);
      case FieldType::kInterval:
        break;
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "column ", path, ": FILE_LOADS cannot stage ", std::string(FieldTypeName(f.type)),
        " (BigQuery's Avro loads have no mapping for it); use a Storage Write API "
        "method"));
  }

  int records_ = 0;
};

}  // namespace

absl::StatusOr<nlohmann::json> AvroStagingSchema(const TableSchema& schema) {
  if (absl::Status valid = ValidateTableSchema(schema); !valid.ok()) return valid;
  Builder builder;
  return builder.Record(schema.fields, "__root__", "");
}

}  // namespace gcpstream::bigquery::staging
