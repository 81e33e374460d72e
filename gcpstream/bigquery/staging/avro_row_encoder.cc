#include "gcpstream/bigquery/staging/avro_row_encoder.h"

#include <avro.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"
#include "gcpstream/bigquery/schema/wire_values.h"
#include "gcpstream/bigquery/source/avro_row_decoder.h"
#include "gcpstream/bigquery/staging/avro_staging_schema.h"
#include "gcpstream/util/json.h"
#include "gcpstream/util/utf8.h"

namespace gcpstream::bigquery::staging {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using Column = AvroRowEncoder::Column;

constexpr std::int64_t kMicrosPerSecond = 1000000;
// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z in microseconds since the epoch.
constexpr std::int64_t kMinTimestampMicros = -62135596800LL * kMicrosPerSecond;
constexpr std::int64_t kMaxTimestampMicros = 253402300799LL * kMicrosPerSecond + 999999;
constexpr std::int32_t kMinDateDays = -719162;  // 0001-01-01
constexpr std::int32_t kMaxDateDays = 2932896;  // 9999-12-31

std::string AvroError() { return avro_strerror(); }

absl::Status Bad(const Column& c, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("column ", c.path, " (",
                                                 std::string(FieldTypeName(c.column->type)),
                                                 "): ", std::string(why)));
}

bool Accepts(FieldType type, FieldDescriptor::Type wire) {
  switch (type) {
    case FieldType::kInt64:
      return wire == FieldDescriptor::TYPE_INT32 || wire == FieldDescriptor::TYPE_INT64 ||
             wire == FieldDescriptor::TYPE_UINT32 || wire == FieldDescriptor::TYPE_SINT32 ||
             wire == FieldDescriptor::TYPE_SINT64 || wire == FieldDescriptor::TYPE_SFIXED32 ||
             wire == FieldDescriptor::TYPE_SFIXED64 || wire == FieldDescriptor::TYPE_FIXED32 ||
             wire == FieldDescriptor::TYPE_ENUM;
    case FieldType::kFloat64:
      return wire == FieldDescriptor::TYPE_DOUBLE || wire == FieldDescriptor::TYPE_FLOAT;
    case FieldType::kBool:
      return wire == FieldDescriptor::TYPE_BOOL;
    case FieldType::kBytes:
      return wire == FieldDescriptor::TYPE_BYTES;
    case FieldType::kString:
    case FieldType::kJson:
    case FieldType::kGeography:
      return wire == FieldDescriptor::TYPE_STRING;
    case FieldType::kDate:
      return wire == FieldDescriptor::TYPE_INT32 || wire == FieldDescriptor::TYPE_INT64 ||
             wire == FieldDescriptor::TYPE_STRING;
    case FieldType::kDatetime:
    case FieldType::kTime:
    case FieldType::kTimestamp:
      return wire == FieldDescriptor::TYPE_INT64 || wire == FieldDescriptor::TYPE_STRING;
    case FieldType::kNumeric:
    case FieldType::kBigNumeric:
      return wire == FieldDescriptor::TYPE_BYTES || wire == FieldDescriptor::TYPE_STRING ||
             wire == FieldDescriptor::TYPE_INT32 || wire == FieldDescriptor::TYPE_INT64;
    case FieldType::kRecord:
      return wire == FieldDescriptor::TYPE_MESSAGE;
    case FieldType::kInterval:
      return false;
  }
  return false;
}

absl::StatusOr<std::vector<Column>> Plan(const std::vector<TableFieldSchema>& columns,
                                         const google::protobuf::Descriptor* message,
                                         const std::string& prefix) {
  std::vector<Column> out;
  for (const TableFieldSchema& col : columns) {
    Column c;
    c.column = &col;
    c.path = prefix.empty() ? col.name : absl::StrCat(prefix, ".", col.name);
    for (int i = 0; message != nullptr && i < message->field_count(); ++i) {
      if (absl::EqualsIgnoreCase(message->field(i)->name(), col.name)) c.field = message->field(i);
    }
    if (c.field == nullptr) {
      if (col.mode == FieldMode::kRequired) {
        return absl::InvalidArgumentError(
            absl::StrCat("column ", c.path,
                         " is REQUIRED but the serializer's writer schema has no field "
                         "for it, so every row would fail the load"));
      }
    } else {
      if (!Accepts(col.type, c.field->type())) {
        return absl::InvalidArgumentError(
            absl::StrCat("column ", c.path, " (", std::string(FieldTypeName(col.type)),
                         ") cannot take the writer field ", c.field->full_name(),
                         " of protobuf type ", c.field->type_name()));
      }
      if (c.field->is_repeated() != (col.mode == FieldMode::kRepeated)) {
        return absl::InvalidArgumentError(
            absl::StrCat("column ", c.path, " is ", std::string(FieldModeName(col.mode)),
                         " but the writer field ", c.field->full_name(),
                         c.field->is_repeated() ? " is repeated" : " is not repeated"));
      }
    }
    if (col.type == FieldType::kRecord) {
      auto sub = Plan(col.fields, c.field == nullptr ? nullptr : c.field->message_type(), c.path);
      if (!sub.ok()) return sub.status();
      c.fields = *std::move(sub);
    }
    out.push_back(std::move(c));
  }
  return out;
}

// One scalar of a field: the repeated element at `index`, or the singular value (index < 0).
struct Reader {
  const Message& m;
  const FieldDescriptor* f;
  int index;
  const Reflection* r() const { return m.GetReflection(); }

  std::int64_t Int() const {
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        return index < 0 ? r()->GetInt32(m, f) : r()->GetRepeatedInt32(m, f, index);
      case FieldDescriptor::CPPTYPE_UINT32:
        return index < 0 ? r()->GetUInt32(m, f) : r()->GetRepeatedUInt32(m, f, index);
      case FieldDescriptor::CPPTYPE_ENUM:
        return index < 0 ? r()->GetEnumValue(m, f) : r()->GetRepeatedEnumValue(m, f, index);
      default:
        return index < 0 ? r()->GetInt64(m, f) : r()->GetRepeatedInt64(m, f, index);
    }
  }
  double Double() const {
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
      return index < 0 ? r()->GetFloat(m, f) : r()->GetRepeatedFloat(m, f, index);
    }
    return index < 0 ? r()->GetDouble(m, f) : r()->GetRepeatedDouble(m, f, index);
  }
  bool Bool() const { return index < 0 ? r()->GetBool(m, f) : r()->GetRepeatedBool(m, f, index); }
  std::string String() const {
    return index < 0 ? r()->GetString(m, f) : r()->GetRepeatedString(m, f, index);
  }
  const Message& Sub() const {
    return index < 0 ? r()->GetMessage(m, f) : r()->GetRepeatedMessage(m, f, index);
  }
  bool IsText() const { return f->type() == FieldDescriptor::TYPE_STRING; }
};

// The packed TIME fields (CivilTimeEncoding) as microseconds since midnight.
absl::StatusOr<std::int64_t> UnpackTime(std::int64_t packed) {
  const std::int64_t micros = packed & 0xFFFFF;
  const std::int64_t second = (packed >> 20) & 0x3F;
  const std::int64_t minute = (packed >> 26) & 0x3F;
  const std::int64_t hour = (packed >> 32) & 0x1F;
  if (micros >= kMicrosPerSecond || second > 59 || minute > 59 || hour > 23) {
    return absl::InvalidArgumentError(
        absl::StrCat("packed time ", packed, " holds an out-of-range field"));
  }
  return ((hour * 60 + minute) * 60 + second) * kMicrosPerSecond + micros;
}

// The packed DATETIME as microseconds since 1970-01-01T00:00:00 (no time zone).
absl::StatusOr<std::int64_t> UnpackDatetime(std::int64_t packed) {
  if (packed < 0 || (packed >> 60) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("packed datetime ", packed, " is out of range"));
  }
  auto time_of_day = UnpackTime(packed & ((std::int64_t{1} << 37) - 1));
  if (!time_of_day.ok()) return time_of_day.status();
  const int day = static_cast<int>((packed >> 37) & 0x1F);
  const int month = static_cast<int>((packed >> 42) & 0xF);
  const std::int64_t year = (packed >> 46) & 0x3FFF;
  const absl::CivilDay civil(year, month, day);
  if (year < 1 || year > 9999 || civil.month() != month || civil.day() != day) {
    return absl::InvalidArgumentError(
        absl::StrCat("packed datetime ", packed, " is not a date in 0001-01-01..9999-12-31"));
  }
  const std::int64_t days = civil - absl::CivilDay(1970, 1, 1);
  return days * 86400 * kMicrosPerSecond + *time_of_day;
}

// A decimal's little-endian two's complement (the wire's NUMERIC bytes) as Avro's big-endian
// decimal, checked against the type's integer digits.
absl::StatusOr<std::string> DecimalBytes(std::string little_endian, FieldType type) {
  const int scale = type == FieldType::kNumeric ? 9 : 38;
  const std::size_t max_integer_digits = type == FieldType::kNumeric ? 29 : 38;
  if (little_endian.empty()) little_endian.push_back('\0');
  if (little_endian.size() > 32) {
    return absl::InvalidArgumentError(
        absl::StrCat(little_endian.size(), " bytes are more than a decimal of this type holds"));
  }
  std::reverse(little_endian.begin(), little_endian.end());
  const std::string text = DecimalFromTwosComplement(little_endian, scale);
  std::string_view integer = text;
  if (!integer.empty() && integer.front() == '-') integer.remove_prefix(1);
  integer = integer.substr(0, integer.find('.'));
  if (integer.size() > max_integer_digits) {
    return absl::InvalidArgumentError(
        absl::StrCat(text, " has more than ", max_integer_digits, " integer digits"));
  }
  return little_endian;
}

absl::Status Put(avro_value_t* out, const Column& c, const Message& m);

absl::Status PutScalar(avro_value_t* out, const Column& c, const Reader& v) {
  const TableFieldSchema& col = *c.column;
  int rc = 0;
  switch (col.type) {
    case FieldType::kInt64:
      rc = avro_value_set_long(out, v.Int());
      break;
    case FieldType::kFloat64:
      rc = avro_value_set_double(out, v.Double());
      break;
    case FieldType::kBool:
      rc = avro_value_set_boolean(out, v.Bool() ? 1 : 0);
      break;
    case FieldType::kBytes: {
      const std::string bytes = v.String();
      if (col.max_length > 0 && static_cast<std::int64_t>(bytes.size()) > col.max_length) {
        return Bad(c, absl::StrCat(bytes.size(), " bytes exceed maxLength ", col.max_length));
      }
      rc = avro_value_set_bytes(out, const_cast<char*>(bytes.data()), bytes.size());
      break;
    }
    case FieldType::kString:
    case FieldType::kJson:
    case FieldType::kGeography: {
      const std::string text = v.String();
      if (auto at = util::InvalidUtf8At(text)) {
        return Bad(c, absl::StrCat("invalid UTF-8 at byte ", *at));
      }
      if (col.max_length > 0) {
        const auto chars = std::count_if(text.begin(), text.end(), [](char ch) {
          return (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
        });
        if (chars > col.max_length) {
          return Bad(c, absl::StrCat(chars, " characters exceed maxLength ", col.max_length));
        }
      }
      if (col.type == FieldType::kJson && !util::ParseJsonBounded(text, 512).ok()) {
        return Bad(c, "the value is not JSON");
      }
      rc = avro_value_set_string_len(out, text.c_str(), text.size() + 1);
      break;
    }
    case FieldType::kDate: {
      std::int64_t days = 0;
      if (v.IsText()) {
        auto d = wire::EncodeDate(v.String());
        if (!d.ok()) return Bad(c, d.status().message());
        days = *d;
      } else {
        days = v.Int();
      }
      if (days < kMinDateDays || days > kMaxDateDays) {
        return Bad(c, absl::StrCat(days, " days is outside 0001-01-01..9999-12-31"));
      }
      rc = avro_value_set_int(out, static_cast<std::int32_t>(days));
      break;
    }
    case FieldType::kTime:
    case FieldType::kDatetime: {
      const bool time = col.type == FieldType::kTime;
      std::int64_t packed = 0;
      if (v.IsText()) {
        auto p = time ? wire::EncodeTime(v.String()) : wire::EncodeDatetime(v.String());
        if (!p.ok()) return Bad(c, p.status().message());
        packed = *p;
      } else {
        packed = v.Int();
      }
      auto micros =
          time ? (packed >> 37 != 0
                      ? absl::StatusOr<std::int64_t>(absl::InvalidArgumentError(
                            absl::StrCat("packed time ", packed, " sets bits above the hour")))
                      : UnpackTime(packed))
               : UnpackDatetime(packed);
      if (!micros.ok()) return Bad(c, micros.status().message());
      rc = avro_value_set_long(out, *micros);
      break;
    }
    case FieldType::kTimestamp: {
      std::int64_t micros = 0;
      if (v.IsText()) {
        auto t = wire::EncodeTimestamp(v.String());
        if (!t.ok()) return Bad(c, t.status().message());
        micros = *t;
      } else {
        micros = v.Int();
      }
      if (micros < kMinTimestampMicros || micros > kMaxTimestampMicros) {
        return Bad(c, absl::StrCat(micros, " µs is outside 0001-01-01..9999-12-31 UTC"));
      }
      rc = avro_value_set_long(out, micros);
      break;
    }
    case FieldType::kNumeric:
    case FieldType::kBigNumeric: {
      absl::StatusOr<std::string> le;
      if (v.f->type() == FieldDescriptor::TYPE_BYTES) {
        le = v.String();
      } else {
        const std::string text = v.IsText() ? v.String() : absl::StrCat(v.Int());
        le = col.type == FieldType::kNumeric ? wire::EncodeNumeric(text)
                                             : wire::EncodeBigNumeric(text);
      }
      if (!le.ok()) return Bad(c, le.status().message());
      auto be = DecimalBytes(*std::move(le), col.type);
      if (!be.ok()) return Bad(c, be.status().message());
      rc = avro_value_set_bytes(out, be->data(), be->size());
      break;
    }
    case FieldType::kRecord: {
      const Message& sub = v.Sub();
      for (std::size_t i = 0; i < c.fields.size(); ++i) {
        avro_value_t child;
        if (avro_value_get_by_index(out, i, &child, nullptr) != 0) return Bad(c, AvroError());
        if (absl::Status st = Put(&child, c.fields[i], sub); !st.ok()) return st;
      }
      break;
    }
    case FieldType::kInterval:
      return Bad(c, "INTERVAL cannot be staged");
  }
  return rc == 0 ? absl::OkStatus() : Bad(c, AvroError());
}

// Puts column `c` of message `m` into `out` (its union, array or plain slot).
absl::Status Put(avro_value_t* out, const Column& c, const Message& m) {
  const TableFieldSchema& col = *c.column;
  const FieldDescriptor* f = c.field;
  if (col.mode == FieldMode::kRepeated) {
    const int n = f == nullptr ? 0 : m.GetReflection()->FieldSize(m, f);
    for (int i = 0; i < n; ++i) {
      avro_value_t element;
      if (avro_value_append(out, &element, nullptr) != 0) return Bad(c, AvroError());
      if (absl::Status st = PutScalar(&element, c, Reader{m, f, i}); !st.ok()) return st;
    }
    return absl::OkStatus();
  }
  const bool present = f != nullptr && m.GetReflection()->HasField(m, f);
  if (col.mode == FieldMode::kRequired) {
    if (!present) return Bad(c, "a REQUIRED value is missing");
    return PutScalar(out, c, Reader{m, f, -1});
  }
  avro_value_t branch;
  if (avro_value_set_branch(out, present ? 1 : 0, &branch) != 0) return Bad(c, AvroError());
  if (!present) return avro_value_set_null(&branch) == 0 ? absl::OkStatus() : Bad(c, AvroError());
  return PutScalar(&branch, c, Reader{m, f, -1});
}

}  // namespace

struct AvroRowEncoder::Value {
  avro_value_t v;
};

absl::StatusOr<std::unique_ptr<AvroRowEncoder>> AvroRowEncoder::Create(
    const TableSchema& table, const google::protobuf::DescriptorProto& writer) {
  auto schema = AvroStagingSchema(table);
  if (!schema.ok()) return schema.status();
  std::unique_ptr<AvroRowEncoder> e(new AvroRowEncoder());
  e->table_ = table;
  e->schema_json_ = schema->dump();
  google::protobuf::FileDescriptorProto file;
  file.set_name("gcpstream_staging_row.proto");
  *file.add_message_type() = writer;
  const auto* built = e->pool_.BuildFile(file);
  if (built == nullptr || built->message_type_count() != 1) {
    return absl::InvalidArgumentError(
        "the serializer's writer descriptor does not build as a self-contained proto2 message");
  }
  const google::protobuf::Descriptor* descriptor = built->message_type(0);
  e->message_.reset(e->factory_.GetPrototype(descriptor)->New());
  auto plan = Plan(e->table_.fields, descriptor, "");
  if (!plan.ok()) return plan.status();
  e->columns_ = *std::move(plan);
  avro_schema_t avro_schema = nullptr;
  if (avro_schema_from_json_length(e->schema_json_.data(), e->schema_json_.size(), &avro_schema) !=
      0) {
    return absl::InternalError("the staging Avro schema does not parse: " + AvroError());
  }
  e->schema_ = avro_schema;
  e->iface_ = avro_generic_class_from_schema(avro_schema);
  auto value = std::make_unique<Value>();
  if (e->iface_ == nullptr || avro_generic_value_new(e->iface_, &value->v) != 0) {
    return absl::InternalError("Avro value: " + AvroError());
  }
  e->value_ = std::move(value);
  return e;
}

AvroRowEncoder::~AvroRowEncoder() {
  if (value_) avro_value_decref(&value_->v);
  if (iface_ != nullptr) avro_value_iface_decref(iface_);
  if (schema_ != nullptr) avro_schema_decref(schema_);
}

absl::Status AvroRowEncoder::encode(std::string_view proto_row, std::string* out) {
  message_->Clear();
  if (!message_->ParseFromArray(proto_row.data(), static_cast<int>(proto_row.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("the serialized row (", proto_row.size(),
                     " bytes) does not parse as the serializer's writer schema"));
  }
  avro_value_t* root = &value_->v;
  avro_value_reset(root);
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    avro_value_t child;
    if (avro_value_get_by_index(root, i, &child, nullptr) != 0) {
      return absl::InternalError(AvroError());
    }
    if (absl::Status st = Put(&child, columns_[i], *message_); !st.ok()) return st;
  }
  std::size_t size = 0;
  if (avro_value_sizeof(root, &size) != 0) return absl::InternalError(AvroError());
  const std::size_t at = out->size();
  out->resize(at + size);
  avro_writer_t writer = avro_writer_memory(out->data() + at, static_cast<int64_t>(size));
  const int rc = avro_value_write(writer, root);
  avro_writer_free(writer);
  if (rc != 0) {
    out->resize(at);
    return absl::InternalError("Avro write: " + AvroError());
  }
  return absl::OkStatus();
}

}  // namespace gcpstream::bigquery::staging
