#include "gcpstream/bigquery/source/avro_row_decoder.h"

#include <avro.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/util/utf8.h"

namespace gcpstream::bigquery {

namespace {

using nlohmann::json;

// The deepest nesting a session schema may have: BigQuery's 15 RECORD levels, plus the array
// and union wrappers around each; anything deeper is not a BigQuery schema (and would recurse).
constexpr int kMaxAvroDepth = 64;

struct SchemaParser {
  std::map<std::string, std::pair<std::vector<TableFieldSchema>, std::vector<AvroColumnPlan>>>
      named;

  absl::Status fail(const std::string& path, std::string_view why) const {
    return absl::InvalidArgumentError(
        absl::StrCat("the read session's Avro schema: column '", path, "' ", std::string(why)));
  }

  static std::string Text(const json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  }

  // Parses `type` (the value of a field's "type") into `field` and `plan`.
  absl::Status parse_type(const json& type, const std::string& path, int depth,
                          TableFieldSchema& field, AvroColumnPlan& plan, bool in_union = false,
                          bool in_array = false) {
    if (depth > kMaxAvroDepth) return fail(path, "nests deeper than any BigQuery schema");
    if (type.is_array()) {  // a union
      if (in_union) return fail(path, "is a union inside a union");
      std::vector<const json*> branches;
      bool has_null = false;
      for (const json& b : type) {
        if (b.is_string() && b.get<std::string>() == "null") {
          has_null = true;
        } else {
          branches.push_back(&b);
        }
      }
      if (in_array) return fail(path, "is an array of nullable elements; REPEATED holds no NULLs");
      if (!has_null || branches.size() != 1) {
        return fail(path, "is a union other than [\"null\", T]; BigQuery has no union type");
      }
      field.mode = FieldMode::kNullable;
      return parse_type(*branches[0], path, depth + 1, field, plan, true, in_array);
    }
    std::string name;
    const json* object = nullptr;
    if (type.is_string()) {
      name = type.get<std::string>();
    } else if (type.is_object()) {
      name = Text(type, "type");
      object = &type;
    } else {
      return fail(path, "has a type that is neither a name, a union nor an object");
    }
    const std::string logical = object ? Text(*object, "logicalType") : "";
    const std::string sql = object ? absl::AsciiStrToUpper(Text(*object, "sqlType")) : "";
    if (name == "array") {
      if (in_array) return fail(path, "is an array of arrays; a REPEATED column does not nest");
      if (!object || !object->contains("items")) return fail(path, "is an array without items");
      field.mode = FieldMode::kRepeated;
      return parse_type((*object)["items"], path, depth + 1, field, plan, false, true);
    }
    if (!in_union && !in_array) field.mode = FieldMode::kRequired;
    if (name == "record") {
      if (object == nullptr) return fail(path, "is a record without fields");
      field.type = FieldType::kRecord;
      plan.type = FieldType::kRecord;
      const std::string record_name = Text(*object, "name");
      GCP_RETURN_IF_ERROR(parse_fields(*object, path, depth + 1, field.fields, plan.fields));
      if (!record_name.empty()) named[record_name] = {field.fields, plan.fields};
      return absl::OkStatus();
    }
    FieldType t;
    if (name == "boolean") {
      t = FieldType::kBool;
    } else if (name == "long") {
      t = logical == "timestamp-micros" ? FieldType::kTimestamp
          : logical == "time-micros"    ? FieldType::kTime
                                        : FieldType::kInt64;
    } else if (name == "int") {
      t = logical == "date" ? FieldType::kDate : FieldType::kInt64;
    } else if (name == "double" || name == "float") {
      t = FieldType::kFloat64;
    } else if (name == "string") {
      t = logical == "datetime" || sql == "DATETIME" ? FieldType::kDatetime
          : sql == "GEOGRAPHY"                       ? FieldType::kGeography
          : sql == "JSON"                            ? FieldType::kJson
                                                     : FieldType::kString;
    } else if (name == "bytes") {
      t = FieldType::kBytes;
      if (logical == "decimal") {
        auto number = [&](const char* key, std::int64_t def) -> std::int64_t {
          auto it = object->find(key);
          if (it == object->end()) return def;
          return it->is_number_integer() ? it->get<std::int64_t>() : -1;
        };
        const std::int64_t scale = number("scale", 0);
        const std::int64_t precision = number("precision", -1);
        if (scale < 0 || scale > 38 || precision < 1 || precision > 77 || scale > precision) {
          return fail(path, "is a decimal of a precision or scale BigQuery does not have");
        }
        t = scale <= 9 && precision - scale <= 29 ? FieldType::kNumeric : FieldType::kBigNumeric;
        plan.scale = static_cast<int>(scale);
      }
    } else if (auto it = named.find(name); it != named.end()) {
      field.type = plan.type = FieldType::kRecord;
      field.fields = it->second.first;
      plan.fields = it->second.second;
      return absl::OkStatus();
    } else {
      return fail(path, absl::StrCat("has Avro type '", name,
                                     "', which no BigQuery column reads as (or a named type "
                                     "used before it is defined)"));
    }
    field.type = t;
    plan.type = t;
    return absl::OkStatus();
  }

  absl::Status parse_fields(const json& record, const std::string& path, int depth,
                            std::vector<TableFieldSchema>& fields,
                            std::vector<AvroColumnPlan>& plans) {
    auto it = record.find("fields");
    if (it == record.end() || !it->is_array() || it->empty()) {
      return fail(path.empty() ? "__root__" : path, "is a record without fields");
    }
    std::set<std::string> seen;
    for (const json& f : *it) {
      if (!f.is_object()) return fail(path, "has a field that is not an object");
      TableFieldSchema field;
      field.name = Text(f, "name");
      const std::string child = path.empty() ? field.name : absl::StrCat(path, ".", field.name);
      if (field.name.empty()) return fail(child, "has no name");
      if (!seen.insert(absl::AsciiStrToLower(field.name)).second) {
        return fail(child, "appears twice");
      }
      if (!f.contains("type")) return fail(child, "has no type");
      AvroColumnPlan plan;
      GCP_RETURN_IF_ERROR(parse_type(f["type"], child, depth, field, plan));
      fields.push_back(std::move(field));
      plans.push_back(std::move(plan));
    }
    return absl::OkStatus();
  }
};

std::string AvroError() { return avro_strerror(); }

}  // namespace

absl::StatusOr<AvroReadSchema> ParseAvroReadSchema(std::string_view avro_schema_json) {
  json root = json::parse(avro_schema_json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object() || SchemaParser::Text(root, "type") != "record") {
    return absl::InvalidArgumentError(
        "the read session's Avro schema is not a JSON Avro record schema");
  }
  auto columns = std::make_shared<TableSchema>();
  AvroReadSchema out;
  SchemaParser parser;
  GCP_RETURN_IF_ERROR(parser.parse_fields(root, "", 1, columns->fields, out.plan));
  out.columns = std::move(columns);
  return out;
}

std::string DecimalFromTwosComplement(std::string_view big_endian, int scale) {
  std::vector<unsigned char> bytes(big_endian.begin(), big_endian.end());
  const bool negative = !bytes.empty() && (bytes[0] & 0x80) != 0;
  if (negative) {  // magnitude = ~x + 1
    for (auto& b : bytes) b = static_cast<unsigned char>(~b);
    for (auto i = bytes.size(); i-- > 0;) {
      if (++bytes[i] != 0) break;
    }
  }
  // Repeated division of the big-endian magnitude by 10 gives the digits, lowest first.
  std::string digits;
  bool nonzero = true;
  while (nonzero) {
    nonzero = false;
    unsigned remainder = 0;
    for (auto& b : bytes) {
      const unsigned cur = (remainder << 8) | b;
      b = static_cast<unsigned char>(cur / 10);
      remainder = cur % 10;
      nonzero |= b != 0;
    }
    digits.push_back(static_cast<char>('0' + remainder));
  }
  while (digits.size() <= static_cast<std::size_t>(scale)) digits.push_back('0');
  std::reverse(digits.begin(), digits.end());
  std::string integer = digits.substr(0, digits.size() - scale);
  std::string fraction = digits.substr(digits.size() - scale);
  while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
  std::string out = negative && (integer != "0" || !fraction.empty()) ? "-" : "";
  out += integer;
  if (!fraction.empty()) absl::StrAppend(&out, ".", fraction);
  return out;
}

struct AvroRowDecoder::Value {
  avro_value_t v;
};

namespace {

absl::Status Mismatch(const TableFieldSchema& field, avro_type_t got) {
  return absl::DataLossError(absl::StrCat("column '", field.name, "' (",
                                          std::string(FieldTypeName(field.type)),
                                          ") holds Avro type ", static_cast<int>(got)));
}

absl::StatusOr<BigQueryValue> DecodeValue(avro_value_t* value, const TableFieldSchema& field,
                                          const AvroColumnPlan& plan, bool element);

absl::StatusOr<BigQueryValue> DecodeScalar(avro_value_t* value, const TableFieldSchema& field,
                                           const AvroColumnPlan& plan) {
  const avro_type_t type = avro_value_get_type(value);
  switch (type) {
    case AVRO_NULL:
      return BigQueryValue();
    case AVRO_BOOLEAN: {
      int b = 0;
      if (avro_value_get_boolean(value, &b) != 0) break;
      return BigQueryValue::Bool(b != 0);
    }
    case AVRO_INT32: {
      std::int32_t i = 0;
      if (avro_value_get_int(value, &i) != 0) break;
      return BigQueryValue::Int64(i);
    }
    case AVRO_INT64: {
      std::int64_t i = 0;
      if (avro_value_get_long(value, &i) != 0) break;
      return BigQueryValue::Int64(i);
    }
    case AVRO_DOUBLE: {
      double d = 0;
      if (avro_value_get_double(value, &d) != 0) break;
      return BigQueryValue::Double(d);
    }
    case AVRO_FLOAT: {
      float f = 0;
      if (avro_value_get_float(value, &f) != 0) break;
      return BigQueryValue::Double(f);
    }
    case AVRO_STRING: {
      const char* s = nullptr;
      std::size_t size = 0;  // counts the terminating NUL libavro adds
      if (avro_value_get_string(value, &s, &size) != 0) break;
      std::string text(s, size > 0 ? size - 1 : 0);
      if (auto bad = util::InvalidUtf8At(text)) {
        return absl::DataLossError(absl::StrCat(
            "column '", field.name, "' holds text that is not UTF-8 (at byte ", *bad, ")"));
      }
      return BigQueryValue::String(std::move(text));
    }
    case AVRO_BYTES: {
      const void* p = nullptr;
      std::size_t size = 0;
      if (avro_value_get_bytes(value, &p, &size) != 0) break;
      std::string_view bytes(static_cast<const char*>(p), size);
      if (plan.type == FieldType::kNumeric || plan.type == FieldType::kBigNumeric) {
        // decimal(77, 38) needs 32 bytes; anything longer is not a BigQuery value.
        if (bytes.size() > 32) {
          return absl::DataLossError(absl::StrCat("column '", field.name, "' holds a decimal of ",
                                                  bytes.size(),
                                                  " bytes; BigQuery's take at most 32"));
        }
        return BigQueryValue::String(DecimalFromTwosComplement(bytes, plan.scale));
      }
      return BigQueryValue::String(std::string(bytes));
    }
    case AVRO_RECORD: {
      if (plan.type != FieldType::kRecord) return Mismatch(field, type);
      std::size_t n = 0;
      avro_value_get_size(value, &n);
      if (n != field.fields.size()) return Mismatch(field, type);
      BigQueryValue::List values;
      values.reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        avro_value_t child;
        if (avro_value_get_by_index(value, i, &child, nullptr) != 0) break;
        GCP_ASSIGN_OR_RETURN(BigQueryValue v,
                             DecodeValue(&child, field.fields[i], plan.fields[i], false));
        values.push_back(std::move(v));
      }
      if (values.size() != n) break;
      return BigQueryValue::Of(std::move(values));
    }
    default:
      return Mismatch(field, type);
  }
  return absl::DataLossError(
      absl::StrCat("column '", field.name, "' could not be read: ", AvroError()));
}

absl::StatusOr<BigQueryValue> DecodeValue(avro_value_t* value, const TableFieldSchema& field,
                                          const AvroColumnPlan& plan, bool element) {
  avro_type_t type = avro_value_get_type(value);
  avro_value_t branch;
  if (type == AVRO_UNION) {
    if (avro_value_get_current_branch(value, &branch) != 0) {
      return absl::DataLossError(absl::StrCat("column '", field.name, "': ", AvroError()));
    }
    value = &branch;
    type = avro_value_get_type(value);
  }
  if (type == AVRO_ARRAY) {
    if (element || field.mode != FieldMode::kRepeated) return Mismatch(field, type);
    std::size_t n = 0;
    avro_value_get_size(value, &n);
    BigQueryValue::List values;
    values.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      avro_value_t child;
      if (avro_value_get_by_index(value, i, &child, nullptr) != 0) {
        return absl::DataLossError(absl::StrCat("column '", field.name, "': ", AvroError()));
      }
      GCP_ASSIGN_OR_RETURN(BigQueryValue v, DecodeValue(&child, field, plan, true));
      values.push_back(std::move(v));
    }
    return BigQueryValue::Of(std::move(values));
  }
  return DecodeScalar(value, field, plan);
}

}  // namespace

absl::StatusOr<std::unique_ptr<AvroRowDecoder>> AvroRowDecoder::Create(
    std::string_view avro_schema_json) {
  GCP_ASSIGN_OR_RETURN(AvroReadSchema schema, ParseAvroReadSchema(avro_schema_json));
  std::unique_ptr<AvroRowDecoder> decoder(new AvroRowDecoder());
  decoder->schema_ = std::move(schema);
  avro_schema_t parsed = nullptr;
  if (avro_schema_from_json_length(avro_schema_json.data(), avro_schema_json.size(), &parsed) !=
      0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the read session's Avro schema does not parse: ", AvroError()));
  }
  decoder->avro_schema_ = parsed;
  decoder->iface_ = avro_generic_class_from_schema(parsed);
  if (decoder->iface_ == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("the read session's Avro schema is not readable: ", AvroError()));
  }
  decoder->value_ = std::make_unique<Value>();
  if (avro_generic_value_new(decoder->iface_, &decoder->value_->v) != 0) {
    decoder->value_.reset();
    return absl::ResourceExhaustedError(absl::StrCat("Avro value: ", AvroError()));
  }
  return decoder;
}

AvroRowDecoder::~AvroRowDecoder() {
  if (value_) avro_value_decref(&value_->v);
  if (iface_ != nullptr) avro_value_iface_decref(iface_);
  if (avro_schema_ != nullptr) avro_schema_decref(avro_schema_);
}

absl::Status AvroRowDecoder::decode(std::string_view block, std::int64_t row_count,
                                    std::vector<BigQueryReadRow>& out) {
  const std::size_t before = out.size();
  if (row_count < 0) {
    return absl::DataLossError(absl::StrCat("a response block claims ", row_count, " rows"));
  }
  avro_reader_t reader = avro_reader_memory(block.data(), static_cast<std::int64_t>(block.size()));
  if (reader == nullptr) return absl::ResourceExhaustedError("Avro reader: out of memory");
  absl::Status status;
  const auto& columns = *schema_.columns;
  for (std::int64_t row = 0; row < row_count && status.ok(); ++row) {
    avro_value_reset(&value_->v);
    if (avro_value_read(reader, &value_->v) != 0) {
      status = absl::DataLossError(
          absl::StrCat("row ", row, " of ", row_count, " in the response block: ", AvroError()));
      break;
    }
    BigQueryReadRow decoded;
    decoded.schema = schema_.columns;
    decoded.values.reserve(columns.fields.size());
    for (std::size_t i = 0; i < columns.fields.size(); ++i) {
      avro_value_t child;
      absl::StatusOr<BigQueryValue> v =
          avro_value_get_by_index(&value_->v, i, &child, nullptr) == 0
              ? DecodeValue(&child, columns.fields[i], schema_.plan[i], false)
              : absl::DataLossError(AvroError());
      if (!v.ok()) {
        status = absl::DataLossError(
            absl::StrCat("row ", row, " of the response block: ", v.status().message()));
        break;
      }
      decoded.values.push_back(*std::move(v));
    }
    if (status.ok()) out.push_back(std::move(decoded));
  }
  // libavro's memory reader does not report its end: a byte still readable is one too many.
  char extra = 0;
  if (status.ok() && avro_read(reader, &extra, 1) == 0) {
    status = absl::DataLossError(
        absl::StrCat("the response block holds more bytes than its ", row_count, " rows"));
  }
  avro_reader_free(reader);
  if (!status.ok()) out.resize(before);
  return status;
}

}  // namespace gcpstream::bigquery
