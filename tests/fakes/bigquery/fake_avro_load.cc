#include "tests/fakes/bigquery/fake_avro_load.h"

#include <avro.h>
#include <fmt/format.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/time/civil_time.h"
#include "gcpstream/util/json.h"
#include "gcpstream/util/utf8.h"
#include "tests/fakes/bigquery/fake_avro.h"

namespace gcpstream::testing::bigquery_fake {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxBlockBytes = 64u << 20;  // decompressed, per block
constexpr std::int64_t kMicrosPerDay = 86400LL * 1000000;
constexpr std::int64_t kMinTimestampMicros = -62135596800LL * 1000000;
constexpr std::int64_t kMaxTimestampMicros = 253402300799LL * 1000000 + 999999;

absl::Status Invalid(std::string what) {
  return absl::InvalidArgumentError("Error while reading data, error message: " + what);
}

class Cursor {
 public:
  explicit Cursor(std::string_view bytes) : bytes_(bytes) {}
  std::size_t at() const { return at_; }
  bool done() const { return at_ >= bytes_.size(); }

  absl::StatusOr<std::int64_t> Long() {
    std::uint64_t z = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= bytes_.size()) return Invalid(fmt::format("truncated varint at byte {}", at_));
      const auto b = static_cast<unsigned char>(bytes_[at_++]);
      z |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        return static_cast<std::int64_t>(z >> 1) ^ -static_cast<std::int64_t>(z & 1);
      }
    }
    return Invalid(fmt::format("varint longer than 10 bytes at byte {}", at_));
  }
  absl::StatusOr<std::string_view> Take(std::int64_t n) {
    if (n < 0 || static_cast<std::uint64_t>(n) > bytes_.size() - at_) {
      return Invalid(fmt::format("a length of {} at byte {} runs past the file's end", n, at_));
    }
    std::string_view out = bytes_.substr(at_, static_cast<std::size_t>(n));
    at_ += static_cast<std::size_t>(n);
    return out;
  }
  absl::StatusOr<std::string_view> Bytes() {
    auto n = Long();
    if (!n.ok()) return n.status();
    return Take(*n);
  }

 private:
  std::string_view bytes_;
  std::size_t at_ = 0;
};

absl::StatusOr<std::string> Inflate(std::string_view in) {
  z_stream z{};
  if (inflateInit2(&z, -15) != Z_OK) return absl::InternalError("inflate init");
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (out.size() >= kMaxBlockBytes) break;
    const std::size_t before = out.size();
    out.resize(std::min(kMaxBlockBytes, before + std::max<std::size_t>(in.size() * 4, 4096)));
    z.next_out = reinterpret_cast<Bytef*>(out.data() + before);
    z.avail_out = static_cast<uInt>(out.size() - before);
    rc = inflate(&z, Z_NO_FLUSH);
    out.resize(z.total_out);
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return Invalid("a deflate block does not inflate (or exceeds 64 MiB)");
  return out;
}

absl::StatusOr<std::string> Unzstd(std::string_view in) {
  const unsigned long long size = ZSTD_getFrameContentSize(in.data(), in.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > kMaxBlockBytes) {
    return Invalid("a zstandard block has no readable frame size (or exceeds 64 MiB)");
  }
  std::string out(static_cast<std::size_t>(size), '\0');
  const std::size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
  if (ZSTD_isError(n) || n != size) return Invalid("a zstandard block does not decompress");
  return out;
}

// An Avro type as {base, logicalType, the type object} (a union is handled by the caller).
struct AvroType {
  std::string base;
  std::string logical;
  const json* node = nullptr;
};

AvroType TypeOf(const json& t) {
  if (t.is_string()) return {t.get<std::string>(), "", &t};
  if (t.is_object() && t.contains("type") && t["type"].is_string()) {
    std::string logical;
    if (t.contains("logicalType") && t["logicalType"].is_string()) logical = t["logicalType"];
    return {t["type"].get<std::string>(), logical, &t};
  }
  return {"?", "", &t};
}

class Loader {
 public:
  explicit Loader(bool logical_types) : logical_types_(logical_types) {}

  absl::StatusOr<json> Record(avro_value_t* v, const json& avro_record, const Schema& columns,
                              const std::string& path) {
    if (!avro_record.is_object() || avro_record.value("type", "") != "record" ||
        !avro_record.contains("fields") || !avro_record["fields"].is_array()) {
      return Invalid(fmt::format("{}: the file's type here is not a record", Where(path)));
    }
    const json& fields = avro_record["fields"];
    json out = json::object();
    for (const Field& column : columns) {
      const std::string child = path.empty() ? column.name : path + "." + column.name;
      std::size_t index = fields.size();
      for (std::size_t i = 0; i < fields.size(); ++i) {
        if (fields[i].is_object() && fields[i].contains("name") && fields[i]["name"].is_string() &&
            absl::EqualsIgnoreCase(fields[i]["name"].get<std::string>(), column.name)) {
          index = i;
        }
      }
      if (index == fields.size()) {
        if (column.mode == "REQUIRED") {
          return Invalid(fmt::format("required column {} is missing from the file", child));
        }
        out[column.name] = column.mode == "REPEATED" ? json::array() : json();
        continue;
      }
      avro_value_t field;
      if (avro_value_get_by_index(v, index, &field, nullptr) != 0) {
        return Invalid(fmt::format("{}: {}", child, avro_strerror()));
      }
      auto value = Value(&field, fields[index].value("type", json()), column, child);
      if (!value.ok()) return value.status();
      out[column.name] = *std::move(value);
    }
    return out;
  }

 private:
  static std::string Where(const std::string& path) { return path.empty() ? "the row" : path; }

  absl::StatusOr<json> Value(avro_value_t* v, const json& type, const Field& column,
                             const std::string& path) {
    if (type.is_array()) {  // a union: null and one type
      if (type.size() != 2 || !(type[0] == "null" || type[1] == "null")) {
        return Invalid(fmt::format("{}: only a union of null and one type loads", path));
      }
      int branch = 0;
      avro_value_t current;
      if (avro_value_get_discriminant(v, &branch) != 0 ||
          avro_value_get_current_branch(v, &current) != 0) {
        return Invalid(fmt::format("{}: {}", path, avro_strerror()));
      }
      if (type[static_cast<std::size_t>(branch)] == "null") {
        if (column.mode == "REQUIRED") {
          return Invalid(fmt::format("required column {} is null", path));
        }
        return column.mode == "REPEATED" ? json::array() : json();
      }
      return Value(&current, type[static_cast<std::size_t>(branch)], column, path);
    }
    const AvroType t = TypeOf(type);
    if (column.mode == "REPEATED") {
      if (t.base != "array" || !t.node->contains("items")) {
        return Invalid(fmt::format("{}: a REPEATED column needs an Avro array", path));
      }
      std::size_t n = 0;
      avro_value_get_size(v, &n);
      json items = json::array();
      Field element = column;
      element.mode = "REQUIRED";
      for (std::size_t i = 0; i < n; ++i) {
        avro_value_t item;
        if (avro_value_get_by_index(v, i, &item, nullptr) != 0) {
          return Invalid(fmt::format("{}: {}", path, avro_strerror()));
        }
        auto value = Value(&item, (*t.node)["items"], element, path);
        if (!value.ok()) return value.status();
        items.push_back(*std::move(value));
      }
      return items;
    }
    return Scalar(v, t, column, path);
  }

  absl::Status Mismatch(const AvroType& t, const Field& column, const std::string& path) {
    return Invalid(fmt::format(
        "{}: cannot load Avro {}{} into {} column{}", path, t.base,
        t.logical.empty() ? "" : " (" + t.logical + ")", column.type,
        logical_types_ ? "" : " (useAvroLogicalTypes is off, so logical types read as raw)"));
  }

  absl::StatusOr<json> Scalar(avro_value_t* v, const AvroType& t, const Field& column,
                              const std::string& path) {
    const std::string logical = logical_types_ ? t.logical : "";
    const std::string& type = column.type;
    auto is = [&](const char* base, const char* lt) { return t.base == base && logical == lt; };
    if (type == "RECORD") {
      if (t.base != "record") return Mismatch(t, column, path);
      return Record(v, *t.node, column.fields, path);
    }
    if (type == "INT64") {
      if (is("long", "")) {
        int64_t x = 0;
        avro_value_get_long(v, &x);
        return std::to_string(x);
      }
      if (is("int", "")) {
        int32_t x = 0;
        avro_value_get_int(v, &x);
        return std::to_string(x);
      }
      return Mismatch(t, column, path);
    }
    if (type == "FLOAT64") {
      double d = 0;
      if (is("double", "")) {
        avro_value_get_double(v, &d);
      } else if (is("float", "")) {
        float f = 0;
        avro_value_get_float(v, &f);
        d = f;
      } else {
        return Mismatch(t, column, path);
      }
      if (std::isnan(d)) return "NaN";
      if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
      return d;
    }
    if (type == "BOOL") {
      if (!is("boolean", "")) return Mismatch(t, column, path);
      int b = 0;
      avro_value_get_boolean(v, &b);
      return b != 0;
    }
    if (type == "STRING" || type == "JSON" || type == "GEOGRAPHY") {
      if (t.base != "string" || !logical.empty()) return Mismatch(t, column, path);
      const char* s = nullptr;
      std::size_t size = 0;
      avro_value_get_string(v, &s, &size);
      std::string text(s, size > 0 ? size - 1 : 0);
      if (auto bad = util::InvalidUtf8At(text)) {
        return Invalid(fmt::format("{}: invalid UTF-8 at byte {}", path, *bad));
      }
      if (type == "JSON" && !util::ParseJsonBounded(text, 512).ok()) {
        return Invalid(fmt::format("{}: not a valid JSON value", path));
      }
      return text;
    }
    if (type == "BYTES") {
      if (!is("bytes", "")) return Mismatch(t, column, path);
      const void* b = nullptr;
      std::size_t size = 0;
      avro_value_get_bytes(v, &b, &size);
      return absl::Base64Escape(std::string(static_cast<const char*>(b), size));
    }
    if (type == "NUMERIC" || type == "BIGNUMERIC") {
      if (!is("bytes", "decimal")) return Mismatch(t, column, path);
      const json& scale_node = (*t.node).value("scale", json(0));
      const int scale = scale_node.is_number_integer() ? scale_node.get<int>() : -1;
      if (scale < 0 || scale > (type == "NUMERIC" ? 9 : 38)) {
        return Invalid(
            fmt::format("{}: decimal scale {} does not fit {}", path, scale_node.dump(), type));
      }
      const void* b = nullptr;
      std::size_t size = 0;
      avro_value_get_bytes(v, &b, &size);
      std::string little(static_cast<const char*>(b), size);
      std::reverse(little.begin(), little.end());
      const std::string text = DecimalFromTwosComplementLE(little, scale);
      std::string_view integer = text;
      if (!integer.empty() && integer.front() == '-') integer.remove_prefix(1);
      integer = integer.substr(0, integer.find('.'));
      if (integer.size() > (type == "NUMERIC" ? 29u : 38u)) {
        return Invalid(fmt::format("{}: {} value {} is out of range", path, type, text));
      }
      return text;
    }
    if (type == "TIMESTAMP") {
      if (!is("long", "timestamp-micros")) return Mismatch(t, column, path);
      int64_t x = 0;
      avro_value_get_long(v, &x);
      if (x < kMinTimestampMicros || x > kMaxTimestampMicros) {
        return Invalid(fmt::format("{}: TIMESTAMP {} µs is out of range", path, x));
      }
      return std::to_string(x);
    }
    if (type == "DATE") {
      if (!is("int", "date")) return Mismatch(t, column, path);
      int32_t days = 0;
      avro_value_get_int(v, &days);
      const absl::CivilDay day = absl::CivilDay(1970, 1, 1) + days;
      if (day.year() < 1 || day.year() > 9999) {
        return Invalid(fmt::format("{}: DATE {} days is out of range", path, days));
      }
      return fmt::format("{:04}-{:02}-{:02}", day.year(), day.month(), day.day());
    }
    if (type == "TIME") {
      if (!is("long", "time-micros")) return Mismatch(t, column, path);
      int64_t x = 0;
      avro_value_get_long(v, &x);
      if (x < 0 || x >= kMicrosPerDay) {
        return Invalid(fmt::format("{}: TIME {} µs is out of range", path, x));
      }
      return Clock(x);
    }
    if (type == "DATETIME") {
      if (is("long", "local-timestamp-micros")) {
        int64_t x = 0;
        avro_value_get_long(v, &x);
        if (x < kMinTimestampMicros || x > kMaxTimestampMicros) {
          return Invalid(fmt::format("{}: DATETIME {} µs is out of range", path, x));
        }
        const std::int64_t days = x >= 0 ? x / kMicrosPerDay : -((-x - 1) / kMicrosPerDay) - 1;
        const absl::CivilDay day = absl::CivilDay(1970, 1, 1) + days;
        return fmt::format("{:04}-{:02}-{:02}T{}", day.year(), day.month(), day.day(),
                           Clock(x - days * kMicrosPerDay));
      }
      if (is("string", "datetime")) {
        const char* s = nullptr;
        std::size_t size = 0;
        avro_value_get_string(v, &s, &size);
        return std::string(s, size > 0 ? size - 1 : 0);
      }
      return Mismatch(t, column, path);
    }
    return Invalid(fmt::format("{}: {} columns do not load from Avro", path, type));
  }

  static std::string Clock(std::int64_t micros_of_day) {
    const std::int64_t micros = micros_of_day % 1000000;
    const std::int64_t seconds = micros_of_day / 1000000;
    return fmt::format("{:02}:{:02}:{:02}{}", seconds / 3600, seconds / 60 % 60, seconds % 60,
                       micros == 0 ? "" : fmt::format(".{:06}", micros));
  }

  bool logical_types_;
};

struct SchemaRef {
  avro_schema_t schema = nullptr;
  avro_value_iface_t* iface = nullptr;
  ~SchemaRef() {
    if (iface != nullptr) avro_value_iface_decref(iface);
    if (schema != nullptr) avro_schema_decref(schema);
  }
};

}  // namespace

absl::StatusOr<std::vector<nlohmann::json>> ReadAvroForLoad(std::string_view file,
                                                            const Schema& table,
                                                            bool logical_types) {
  Cursor in(file);
  auto magic = in.Take(4);
  if (!magic.ok() || *magic != std::string_view("Obj\x01", 4)) {
    return Invalid("the file is not an Avro object container (bad magic)");
  }
  std::string schema_text;
  std::string codec = "null";
  for (;;) {
    auto count = in.Long();
    if (!count.ok()) return count.status();
    if (*count == 0) break;
    if (*count < 0) {
      if (auto size = in.Long(); !size.ok()) return size.status();
      *count = -*count;
    }
    if (*count > 1000) return Invalid("the header's metadata map is too large");
    for (std::int64_t i = 0; i < *count; ++i) {
      auto key = in.Bytes();
      if (!key.ok()) return key.status();
      auto value = in.Bytes();
      if (!value.ok()) return value.status();
      if (*key == "avro.schema") schema_text = std::string(*value);
      if (*key == "avro.codec") codec = std::string(*value);
    }
  }
  auto sync = in.Take(16);
  if (!sync.ok()) return sync.status();
  if (codec != "null" && codec != "deflate" && codec != "zstandard") {
    return Invalid("unsupported Avro codec \"" + absl::CEscape(codec.substr(0, 64)) + "\"");
  }
  auto schema_json = util::ParseJsonBounded(schema_text, 64);
  if (!schema_json.ok()) return Invalid("the header's avro.schema is not JSON");
  SchemaRef ref;
  if (avro_schema_from_json_length(schema_text.data(), schema_text.size(), &ref.schema) != 0) {
    return Invalid(std::string("the header's avro.schema is not a schema: ") + avro_strerror());
  }
  ref.iface = avro_generic_class_from_schema(ref.schema);
  if (ref.iface == nullptr) return Invalid(avro_strerror());
  avro_value_t value;
  if (avro_generic_value_new(ref.iface, &value) != 0) return Invalid(avro_strerror());
  std::unique_ptr<avro_value_t, void (*)(avro_value_t*)> value_ref(&value, avro_value_decref);

  Loader loader(logical_types);
  std::vector<nlohmann::json> rows;
  while (!in.done()) {
    const std::size_t block_at = in.at();
    auto count = in.Long();
    if (!count.ok()) return count.status();
    auto data = in.Bytes();
    if (!data.ok()) return data.status();
    auto block_sync = in.Take(16);
    if (!block_sync.ok()) return block_sync.status();
    if (*block_sync != *sync) {
      return Invalid(
          fmt::format("the block at byte {} does not end with the sync marker", block_at));
    }
    if (*count < 0 || static_cast<std::uint64_t>(*count) > data->size() + 1) {
      return Invalid(fmt::format("the block at byte {} claims {} rows", block_at, *count));
    }
    std::string plain;
    if (codec == "deflate") {
      auto inflated = Inflate(*data);
      if (!inflated.ok()) return inflated.status();
      plain = *std::move(inflated);
    } else if (codec == "zstandard") {
      auto out = Unzstd(*data);
      if (!out.ok()) return out.status();
      plain = *std::move(out);
    } else {
      plain = std::string(*data);
    }
    avro_reader_t reader = avro_reader_memory(plain.data(), static_cast<int64_t>(plain.size()));
    std::unique_ptr<std::remove_pointer_t<avro_reader_t>, void (*)(avro_reader_t)> reader_ref(
        reader, avro_reader_free);
    for (std::int64_t i = 0; i < *count; ++i) {
      avro_value_reset(&value);
      if (avro_value_read(reader, &value) != 0) {
        return Invalid(fmt::format("row {} of the block at byte {} does not decode: {}", i,
                                   block_at, avro_strerror()));
      }
      auto row = loader.Record(&value, *schema_json, table, "");
      if (!row.ok()) return row.status();
      rows.push_back(*std::move(row));
    }
    char extra = 0;
    if (avro_read(reader, &extra, 1) == 0) {
      return Invalid(
          fmt::format("the block at byte {} holds more bytes than its {} rows", block_at, *count));
    }
  }
  return rows;
}

}  // namespace gcpstream::testing::bigquery_fake
