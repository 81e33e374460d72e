#include "gcpstream/bigquery/schema/json_row_encoder.h"

#include <fmt/format.h>
#include <google/protobuf/message.h>

#include <cmath>
#include <limits>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "gcpstream/bigquery/schema/wire_values.h"
#include "gcpstream/bigquery/schema/writer_descriptor.h"
#include "gcpstream/util/utf8.h"

namespace gcpstream::bigquery {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

constexpr int kMaxJsonDepth = 64;

absl::Status Refuse(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(fmt::format("column \"{}\": {}", path, what));
}

int Depth(const nlohmann::json& v, int limit) {
  if (limit <= 0) return 1;
  int deepest = 0;
  if (v.is_structured()) {
    for (const auto& item : v) deepest = std::max(deepest, Depth(item, limit - 1));
    return deepest + 1;
  }
  return 0;
}

std::string Kind(const nlohmann::json& v) { return v.type_name(); }

// One non-RECORD value, added or set on `m`.
absl::Status PutScalar(Message& m, const FieldDescriptor& f, const TableFieldSchema& column,
                       const nlohmann::json& v, const std::string& path) {
  const Reflection& r = *m.GetReflection();
  const bool rep = f.is_repeated();
  auto put_string = [&](std::string s) {
    rep ? r.AddString(&m, &f, std::move(s)) : r.SetString(&m, &f, std::move(s));
  };
  auto put_int64 = [&](std::int64_t x) { rep ? r.AddInt64(&m, &f, x) : r.SetInt64(&m, &f, x); };
  auto text = [&](const char* want) -> absl::StatusOr<std::string> {
    if (!v.is_string()) return Refuse(path, fmt::format("expected {}, got {}", want, Kind(v)));
    std::string s = v.get<std::string>();
    if (auto bad = util::InvalidUtf8At(s)) {
      return Refuse(path, fmt::format("invalid UTF-8 at byte {}", *bad));
    }
    return s;
  };
  switch (column.type) {
    case FieldType::kString:
    case FieldType::kGeography:
    case FieldType::kInterval: {
      auto s = text("a string");
      if (!s.ok()) return s.status();
      std::int64_t chars = 0;
      for (unsigned char c : *s) chars += (c & 0xC0) != 0x80;
      if (column.max_length > 0 && chars > column.max_length) {
        return Refuse(path,
                      fmt::format("{} characters exceed maxLength {}", chars, column.max_length));
      }
      put_string(std::move(*s));
      return absl::OkStatus();
    }
    case FieldType::kJson:
      if (Depth(v, kMaxJsonDepth + 1) > kMaxJsonDepth) {
        return Refuse(path, fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth));
      }
      try {
        put_string(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict));
      } catch (const nlohmann::json::exception&) {
        return Refuse(path, "a string inside the JSON value is not valid UTF-8");
      }
      return absl::OkStatus();
    case FieldType::kBytes: {
      auto s = text("a base64 string");
      if (!s.ok()) return s.status();
      std::string bytes;
      if (!absl::Base64Unescape(*s, &bytes)) return Refuse(path, "not valid base64");
      if (column.max_length > 0 && static_cast<std::int64_t>(bytes.size()) > column.max_length) {
        return Refuse(path,
                      fmt::format("{} bytes exceed maxLength {}", bytes.size(), column.max_length));
      }
      put_string(std::move(bytes));
      return absl::OkStatus();
    }
    case FieldType::kInt64: {
      std::int64_t x = 0;
      if (v.is_number_integer() &&
          !(v.is_number_unsigned() &&
            v.get<std::uint64_t>() >
                static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))) {
        x = v.get<std::int64_t>();
      } else if (!(v.is_string() && absl::SimpleAtoi(v.get<std::string>(), &x))) {
        return Refuse(path, fmt::format("expected an int64, got {}", v.dump()));
      }
      put_int64(x);
      return absl::OkStatus();
    }
    case FieldType::kFloat64: {
      double x = 0;
      if (v.is_number()) {
        x = v.get<double>();
      } else if (v.is_string() && v.get<std::string>() == "NaN") {
        x = std::numeric_limits<double>::quiet_NaN();
      } else if (v.is_string() && v.get<std::string>() == "Infinity") {
        x = std::numeric_limits<double>::infinity();
      } else if (v.is_string() && v.get<std::string>() == "-Infinity") {
        x = -std::numeric_limits<double>::infinity();
      } else {
        return Refuse(path, fmt::format("expected a number, got {}", Kind(v)));
      }
      rep ? r.AddDouble(&m, &f, x) : r.SetDouble(&m, &f, x);
      return absl::OkStatus();
    }
    case FieldType::kBool:
      if (!v.is_boolean()) return Refuse(path, fmt::format("expected a boolean, got {}", Kind(v)));
      rep ? r.AddBool(&m, &f, v.get<bool>()) : r.SetBool(&m, &f, v.get<bool>());
      return absl::OkStatus();
    case FieldType::kNumeric:
    case FieldType::kBigNumeric: {
      std::string decimal;
      if (v.is_number_integer()) {
        decimal = v.dump();
      } else if (v.is_string()) {
        decimal = v.get<std::string>();
      } else {
        return Refuse(path,
                      fmt::format("expected a decimal string or an integer, got {}", Kind(v)));
      }
      auto bytes = column.type == FieldType::kNumeric ? wire::EncodeNumeric(decimal)
                                                      : wire::EncodeBigNumeric(decimal);
      if (!bytes.ok()) return Refuse(path, std::string(bytes.status().message()));
      put_string(std::move(*bytes));
      return absl::OkStatus();
    }
    case FieldType::kDate: {
      auto s = text("a DATE string");
      if (!s.ok()) return s.status();
      auto days = wire::EncodeDate(*s);
      if (!days.ok()) return Refuse(path, std::string(days.status().message()));
      rep ? r.AddInt32(&m, &f, *days) : r.SetInt32(&m, &f, *days);
      return absl::OkStatus();
    }
    case FieldType::kDatetime:
    case FieldType::kTime: {
      auto s = text("a string");
      if (!s.ok()) return s.status();
      auto packed =
          column.type == FieldType::kTime ? wire::EncodeTime(*s) : wire::EncodeDatetime(*s);
      if (!packed.ok()) return Refuse(path, std::string(packed.status().message()));
      put_int64(*packed);
      return absl::OkStatus();
    }
    case FieldType::kTimestamp: {
      absl::StatusOr<std::int64_t> micros;
      const bool fits = v.is_number_integer() &&
                        !(v.is_number_unsigned() &&
                          v.get<std::uint64_t>() >
                              static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
      if (fits) {
        micros = wire::EncodeTimestamp(absl::FromUnixMicros(v.get<std::int64_t>()));
      } else if (v.is_string()) {
        micros = wire::EncodeTimestamp(v.get<std::string>());
      } else {
        return Refuse(path,
                      fmt::format("expected a TIMESTAMP string or microseconds, got {}", v.dump()));
      }
      if (!micros.ok()) return Refuse(path, std::string(micros.status().message()));
      put_int64(*micros);
      return absl::OkStatus();
    }
    case FieldType::kRecord:
      break;
  }
  return Refuse(path, "unsupported column type");
}

absl::Status FillMessage(Message& m, const std::vector<TableFieldSchema>& columns,
                         const nlohmann::json& object, const std::string& prefix);

absl::Status PutValue(Message& m, const FieldDescriptor& f, const TableFieldSchema& column,
                      const nlohmann::json& v, const std::string& path) {
  if (column.type != FieldType::kRecord) return PutScalar(m, f, column, v, path);
  if (!v.is_object()) return Refuse(path, fmt::format("expected an object, got {}", Kind(v)));
  const Reflection& r = *m.GetReflection();
  Message* sub = f.is_repeated() ? r.AddMessage(&m, &f) : r.MutableMessage(&m, &f);
  return FillMessage(*sub, column.fields, v, path + ".");
}

absl::Status FillMessage(Message& m, const std::vector<TableFieldSchema>& columns,
                         const nlohmann::json& object, const std::string& prefix) {
  const auto* d = m.GetDescriptor();
  std::size_t used = 0;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const TableFieldSchema& column = columns[i];
    const FieldDescriptor& f = *d->field(static_cast<int>(i));  // fields follow column order
    const std::string path = prefix + column.name;
    auto it = object.find(column.name);
    const bool present = it != object.end() && !it->is_null();
    if (it != object.end()) ++used;
    if (!present) {
      if (column.mode == FieldMode::kRequired) return Refuse(path, "REQUIRED but missing");
      continue;
    }
    if (column.mode == FieldMode::kRepeated) {
      if (!it->is_array()) return Refuse(path, fmt::format("expected an array, got {}", Kind(*it)));
      for (std::size_t k = 0; k < it->size(); ++k) {
        const auto& item = (*it)[k];
        if (item.is_null())
          return Refuse(fmt::format("{}[{}]", path, k), "null in a REPEATED column");
        if (absl::Status s = PutValue(m, f, column, item, fmt::format("{}[{}]", path, k));
            !s.ok()) {
          return s;
        }
      }
      continue;
    }
    if (absl::Status s = PutValue(m, f, column, *it, path); !s.ok()) return s;
  }
  if (used != object.size()) {
    for (auto it = object.begin(); it != object.end(); ++it) {
      bool known = false;
      for (const auto& c : columns) known = known || c.name == it.key();
      if (!known) {
        return absl::InvalidArgumentError(
            fmt::format("column \"{}{}\" is not in the table schema", prefix, it.key()));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<JsonRowEncoder>> JsonRowEncoder::Create(TableSchema schema) {
  auto row_type = WriterRowType::Create(schema);
  if (!row_type.ok()) return row_type.status();
  std::unique_ptr<JsonRowEncoder> e(new JsonRowEncoder());
  e->row_type_ = std::move(*row_type);
  return e;
}

absl::StatusOr<std::string> JsonRowEncoder::encode(const nlohmann::json& row) const {
  if (!row.is_object()) {
    return absl::InvalidArgumentError(
        fmt::format("a BigQuery row must be a JSON object, got {}", row.type_name()));
  }
  std::unique_ptr<Message> m = row_type_->NewRow();
  if (absl::Status s = FillMessage(*m, schema().fields, row, ""); !s.ok()) return s;
  return m->SerializeAsString();
}

}  // namespace gcpstream::bigquery
