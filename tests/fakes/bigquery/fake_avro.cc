#include "tests/fakes/bigquery/fake_avro.h"

#include <avro.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"

namespace gcpstream::testing::bigquery_fake {

namespace {

using nlohmann::json;

json ScalarType(const Field& f, const std::string& path) {
  const std::string& t = f.type;
  if (t == "BOOL") return "boolean";
  if (t == "INT64") return "long";
  if (t == "FLOAT64") return "double";
  if (t == "BYTES") return "bytes";
  if (t == "NUMERIC")
    return {{"type", "bytes"}, {"logicalType", "decimal"}, {"precision", 38}, {"scale", 9}};
  if (t == "BIGNUMERIC")
    return {{"type", "bytes"}, {"logicalType", "decimal"}, {"precision", 77}, {"scale", 38}};
  if (t == "DATE") return {{"type", "int"}, {"logicalType", "date"}};
  if (t == "TIME") return {{"type", "long"}, {"logicalType", "time-micros"}};
  if (t == "TIMESTAMP") return {{"type", "long"}, {"logicalType", "timestamp-micros"}};
  if (t == "DATETIME") return {{"type", "string"}, {"logicalType", "datetime"}};
  if (t == "GEOGRAPHY" || t == "JSON") return {{"type", "string"}, {"sqlType", t}};
  if (t == "RECORD") {
    json fields = json::array();
    for (const Field& sub : f.fields) {
      const std::string child = path + "__" + sub.name;
      json type = ScalarType(sub, child);
      if (sub.mode == "REPEATED") {
        type = {{"type", "array"}, {"items", type}};
      } else if (sub.mode != "REQUIRED") {
        type = json::array({"null", type});
      }
      fields.push_back({{"name", sub.name}, {"type", type}});
    }
    return {{"type", "record"}, {"name", path}, {"fields", fields}};
  }
  return "string";  // STRING, INTERVAL
}

std::string Error() { return avro_strerror(); }

absl::Status Bad(const Field& f, const json& v, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("column ", f.name, " (", f.type, ") cannot hold ",
                                                 v.dump(), ": ", std::string(why)));
}

absl::StatusOr<std::int64_t> Int(const json& v) {
  std::int64_t out = 0;
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_string() && absl::SimpleAtoi(v.get<std::string>(), &out)) return out;
  return absl::InvalidArgumentError("not an integer");
}

absl::StatusOr<std::int64_t> TimeMicros(const std::string& text) {
  int h = 0, m = 0, s = 0;
  char rest[16] = {0};
  if (std::sscanf(text.c_str(), "%d:%d:%d%15s", &h, &m, &s, rest) < 3) {
    return absl::InvalidArgumentError("not a TIME");
  }
  std::int64_t micros = 0;
  if (rest[0] == '.') {
    std::string frac = std::string(rest + 1).substr(0, 6);
    frac.resize(6, '0');
    micros = std::atoll(frac.c_str());
  }
  return ((h * 60LL + m) * 60 + s) * 1000000 + micros;
}

absl::Status Put(avro_value_t* out, const Field& f, const json& v, bool element);

absl::Status PutScalar(avro_value_t* out, const Field& f, const json& v) {
  const std::string& t = f.type;
  int rc = 0;
  if (t == "BOOL") {
    if (!v.is_boolean()) return Bad(f, v, "not a boolean");
    rc = avro_value_set_boolean(out, v.get<bool>() ? 1 : 0);
  } else if (t == "INT64" || t == "TIMESTAMP") {
    auto i = Int(v);
    if (!i.ok()) return Bad(f, v, i.status().message());
    rc = avro_value_set_long(out, *i);
  } else if (t == "FLOAT64") {
    double d = 0;
    if (v.is_number()) {
      d = v.get<double>();
    } else if (v.is_string() && v == "NaN") {
      d = std::nan("");
    } else if (v.is_string() && (v == "Infinity" || v == "-Infinity")) {
      d = v == "Infinity" ? HUGE_VAL : -HUGE_VAL;
    } else {
      return Bad(f, v, "not a number");
    }
    rc = avro_value_set_double(out, d);
  } else if (t == "BYTES") {
    std::string bytes;
    if (!v.is_string() || !absl::Base64Unescape(v.get<std::string>(), &bytes)) {
      return Bad(f, v, "not base64");
    }
    rc = avro_value_set_bytes(out, bytes.data(), bytes.size());
  } else if (t == "NUMERIC" || t == "BIGNUMERIC") {
    if (!v.is_string() && !v.is_number()) return Bad(f, v, "not a decimal");
    auto bytes = DecimalToTwosComplement(v.is_string() ? v.get<std::string>() : v.dump(),
                                         t == "NUMERIC" ? 9 : 38);
    if (!bytes.ok()) return Bad(f, v, bytes.status().message());
    rc = avro_value_set_bytes(out, bytes->data(), bytes->size());
  } else if (t == "DATE") {
    absl::CivilDay day;
    if (!v.is_string() || !absl::ParseCivilTime(v.get<std::string>(), &day)) {
      return Bad(f, v, "not a DATE");
    }
    rc = avro_value_set_int(out, static_cast<std::int32_t>(day - absl::CivilDay(1970, 1, 1)));
  } else if (t == "TIME") {
    auto micros = v.is_string() ? TimeMicros(v.get<std::string>())
                                : absl::StatusOr<std::int64_t>(absl::InvalidArgumentError("x"));
    if (!micros.ok()) return Bad(f, v, "not a TIME");
    rc = avro_value_set_long(out, *micros);
  } else if (t == "RECORD") {
    if (!v.is_object()) return Bad(f, v, "not an object");
    for (std::size_t i = 0; i < f.fields.size(); ++i) {
      avro_value_t child;
      if (avro_value_get_by_index(out, i, &child, nullptr) != 0) return Bad(f, v, Error());
      auto it = v.find(f.fields[i].name);
      const json& sub = it == v.end() ? json() : *it;
      if (absl::Status st = Put(&child, f.fields[i], sub, false); !st.ok()) return st;
    }
  } else {
    if (!v.is_string()) return Bad(f, v, "not text");
    const std::string& s = v.get_ref<const std::string&>();
    rc = avro_value_set_string_len(out, s.c_str(), s.size() + 1);
  }
  return rc == 0 ? absl::OkStatus() : Bad(f, v, Error());
}

absl::Status Put(avro_value_t* out, const Field& f, const json& v, bool element) {
  if (!element && f.mode == "REPEATED") {
    if (!v.is_null() && !v.is_array()) return Bad(f, v, "not an array");
    if (v.is_array()) {
      for (const json& e : v) {
        avro_value_t child;
        if (avro_value_append(out, &child, nullptr) != 0) return Bad(f, v, Error());
        if (absl::Status st = Put(&child, f, e, true); !st.ok()) return st;
      }
    }
    return absl::OkStatus();
  }
  if (!element && f.mode != "REQUIRED") {
    avro_value_t branch;
    if (v.is_null()) {
      if (avro_value_set_branch(out, 0, &branch) != 0) return Bad(f, v, Error());
      return avro_value_set_null(&branch) == 0 ? absl::OkStatus() : Bad(f, v, Error());
    }
    if (avro_value_set_branch(out, 1, &branch) != 0) return Bad(f, v, Error());
    return PutScalar(&branch, f, v);
  }
  if (v.is_null()) return Bad(f, v, "a REQUIRED value is missing");
  return PutScalar(out, f, v);
}

}  // namespace

absl::StatusOr<std::string> DecimalToTwosComplement(const std::string& text, int scale) {
  std::string s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.erase(0, 1);
  }
  std::string integer = s, fraction;
  if (auto dot = s.find('.'); dot != std::string::npos) {
    integer = s.substr(0, dot);
    fraction = s.substr(dot + 1);
  }
  while (fraction.size() > static_cast<std::size_t>(scale) && fraction.back() == '0') {
    fraction.pop_back();
  }
  if ((integer.empty() && fraction.empty()) || fraction.size() > static_cast<std::size_t>(scale) ||
      !std::all_of(integer.begin(), integer.end(), ::isdigit) ||
      !std::all_of(fraction.begin(), fraction.end(), ::isdigit)) {
    return absl::InvalidArgumentError("not a decimal of scale " + std::to_string(scale));
  }
  fraction.resize(static_cast<std::size_t>(scale), '0');
  // Big-endian magnitude: multiply-add each decimal digit.
  std::vector<unsigned char> mag{0};
  for (char c : integer + fraction) {
    unsigned carry = static_cast<unsigned>(c - '0');
    for (auto i = mag.size(); i-- > 0;) {
      const unsigned cur = mag[i] * 10u + carry;
      mag[i] = static_cast<unsigned char>(cur & 0xff);
      carry = cur >> 8;
    }
    while (carry > 0) {
      mag.insert(mag.begin(), static_cast<unsigned char>(carry & 0xff));
      carry >>= 8;
    }
  }
  if (mag[0] & 0x80) mag.insert(mag.begin(), 0);  // keep the sign bit clear
  if (negative) {
    for (auto& b : mag) b = static_cast<unsigned char>(~b);
    for (auto i = mag.size(); i-- > 0;) {
      if (++mag[i] != 0) break;
    }
  }
  return std::string(mag.begin(), mag.end());
}

std::string DecimalFromTwosComplementLE(const std::string& bytes, int scale) {
  std::vector<std::uint8_t> mag(bytes.begin(), bytes.end());
  const bool negative = !mag.empty() && (mag.back() & 0x80) != 0;
  if (negative) {  // two's complement negation
    bool carry = true;
    for (auto& b : mag) {
      b = static_cast<std::uint8_t>(~b);
      if (carry) {
        carry = (++b == 0);
      }
    }
  }
  std::string digits;
  while (std::any_of(mag.begin(), mag.end(), [](std::uint8_t b) { return b != 0; })) {
    unsigned remainder = 0;
    for (auto it = mag.rbegin(); it != mag.rend(); ++it) {
      const unsigned cur = (remainder << 8) | *it;
      *it = static_cast<std::uint8_t>(cur / 10);
      remainder = cur % 10;
    }
    digits.push_back(static_cast<char>('0' + remainder));
  }
  while (digits.size() <= static_cast<std::size_t>(scale)) digits.push_back('0');
  std::reverse(digits.begin(), digits.end());
  std::string out = digits.substr(0, digits.size() - static_cast<std::size_t>(scale));
  std::string frac = digits.substr(digits.size() - static_cast<std::size_t>(scale));
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  if (!frac.empty()) out += "." + frac;
  if (negative && out != "0") out = "-" + out;
  return out;
}

std::string AvroSchemaFor(const Schema& columns) {
  Field root;
  root.name = "__root__";
  root.type = "RECORD";
  root.mode = "REQUIRED";
  root.fields = columns;
  return ScalarType(root, "__root__").dump();
}

struct AvroRowsWriter::Value {
  avro_value_t v;
};

absl::StatusOr<std::unique_ptr<AvroRowsWriter>> AvroRowsWriter::Create(const Schema& columns) {
  std::unique_ptr<AvroRowsWriter> w(new AvroRowsWriter());
  w->columns_ = columns;
  w->schema_json_ = AvroSchemaFor(columns);
  avro_schema_t schema = nullptr;
  if (avro_schema_from_json_length(w->schema_json_.data(), w->schema_json_.size(), &schema) != 0) {
    return absl::InternalError("the fake's Avro schema does not parse: " + Error());
  }
  w->schema_ = schema;
  w->iface_ = avro_generic_class_from_schema(schema);
  w->value_ = std::make_unique<Value>();
  if (w->iface_ == nullptr || avro_generic_value_new(w->iface_, &w->value_->v) != 0) {
    w->value_.reset();
    return absl::InternalError("Avro value: " + Error());
  }
  return w;
}

AvroRowsWriter::~AvroRowsWriter() {
  if (value_) avro_value_decref(&value_->v);
  if (iface_ != nullptr) avro_value_iface_decref(iface_);
  if (schema_ != nullptr) avro_schema_decref(schema_);
}

absl::Status AvroRowsWriter::append(const nlohmann::json& row, std::string* block) {
  avro_value_t* root = &value_->v;
  avro_value_reset(root);
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    avro_value_t child;
    if (avro_value_get_by_index(root, i, &child, nullptr) != 0) {
      return absl::InternalError(Error());
    }
    auto it = row.find(columns_[i].name);
    if (absl::Status st = Put(&child, columns_[i], it == row.end() ? json() : *it, false);
        !st.ok()) {
      return st;
    }
  }
  std::size_t size = 0;
  if (avro_value_sizeof(root, &size) != 0) return absl::InternalError(Error());
  const std::size_t at = block->size();
  block->resize(at + size);
  avro_writer_t writer = avro_writer_memory(block->data() + at, static_cast<std::int64_t>(size));
  const int rc = avro_value_write(writer, root);
  avro_writer_free(writer);
  if (rc != 0) {
    block->resize(at);
    return absl::InternalError("Avro write: " + Error());
  }
  return absl::OkStatus();
}

}  // namespace gcpstream::testing::bigquery_fake
