#include "gcpstream/bigquery/source/bigquery_read_row.h"

#include <cmath>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"

namespace gcpstream::bigquery {

namespace {

template <typename V>
absl::StatusOr<V> Get(const std::variant<std::monostate, bool, std::int64_t, double, std::string,
                                         BigQueryValue::List>& v,
                      const char* what) {
  if (const V* got = std::get_if<V>(&v)) return *got;
  return absl::FailedPreconditionError(
      absl::StrCat("the value is ", v.index() == 0 ? "NULL" : "of another kind", ", not ", what));
}

std::string FormatTimeOfDay(std::int64_t micros) {
  const std::int64_t seconds = micros / 1000000;
  return absl::StrFormat("%02d:%02d:%02d.%06d", seconds / 3600, seconds / 60 % 60, seconds % 60,
                         micros % 1000000);
}

nlohmann::json ScalarToJson(const TableFieldSchema& field, const BigQueryValue& value) {
  if (value.is_null()) return nullptr;
  switch (field.type) {
    case FieldType::kBool:
      if (auto b = value.as_bool(); b.ok()) return *b;
      break;
    case FieldType::kInt64:
      if (auto i = value.as_int64(); i.ok()) return *i;
      break;
    case FieldType::kFloat64:
      if (auto d = value.as_double(); d.ok()) {
        if (std::isnan(*d)) return "NaN";
        if (std::isinf(*d)) return *d > 0 ? "Infinity" : "-Infinity";
        return *d;
      }
      break;
    case FieldType::kTimestamp:
      if (auto i = value.as_int64(); i.ok()) {
        return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::FromUnixMicros(*i),
                                absl::UTCTimeZone());
      }
      break;
    case FieldType::kDate:
      if (auto i = value.as_int64(); i.ok()) {
        return absl::FormatCivilTime(absl::CivilDay(1970, 1, 1) + *i);
      }
      break;
    case FieldType::kTime:
      if (auto i = value.as_int64(); i.ok()) {
        if (*i < 0 || *i >= 86400LL * 1000000) return *i;  // not a time of day: kept as stored
        return FormatTimeOfDay(*i);
      }
      break;
    case FieldType::kBytes:
      if (auto s = value.as_string(); s.ok())
        return absl::Base64Escape(absl::string_view(s->data(), s->size()));
      break;
    case FieldType::kRecord:
      if (auto list = value.as_list(); list.ok()) {
        nlohmann::json out = nlohmann::json::object();
        for (std::size_t i = 0; i < field.fields.size() && i < (*list)->size(); ++i) {
          out[field.fields[i].name] = BigQueryValueToJson(field.fields[i], (**list)[i]);
        }
        return out;
      }
      break;
    default:
      if (auto s = value.as_string(); s.ok()) return std::string(*s);
      break;
  }
  return nullptr;  // a value of the wrong kind for its column: nothing faithful to show
}

}  // namespace

absl::StatusOr<bool> BigQueryValue::as_bool() const { return Get<bool>(v_, "BOOL"); }
absl::StatusOr<std::int64_t> BigQueryValue::as_int64() const {
  return Get<std::int64_t>(v_, "an integer");
}
absl::StatusOr<double> BigQueryValue::as_double() const { return Get<double>(v_, "FLOAT64"); }
absl::StatusOr<std::string_view> BigQueryValue::as_string() const {
  if (const std::string* s = std::get_if<std::string>(&v_)) return std::string_view(*s);
  return Get<std::string>(v_, "text or bytes").status();
}
absl::StatusOr<const BigQueryValue::List*> BigQueryValue::as_list() const {
  if (const List* l = std::get_if<List>(&v_)) return l;
  return Get<List>(v_, "a RECORD or REPEATED value").status();
}

nlohmann::json BigQueryValueToJson(const TableFieldSchema& field, const BigQueryValue& value) {
  if (field.mode != FieldMode::kRepeated) return ScalarToJson(field, value);
  nlohmann::json out = nlohmann::json::array();
  auto list = value.as_list();
  if (!list.ok()) return out;  // BigQuery has no NULL array: an absent one reads as empty
  for (const BigQueryValue& element : **list) out.push_back(ScalarToJson(field, element));
  return out;
}

const BigQueryValue* BigQueryReadRow::find(std::string_view name) const {
  if (!schema) return nullptr;
  for (std::size_t i = 0; i < schema->fields.size() && i < values.size(); ++i) {
    if (absl::EqualsIgnoreCase(schema->fields[i].name, absl::string_view(name.data(), name.size())))
      return &values[i];
  }
  return nullptr;
}

nlohmann::json BigQueryReadRow::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  if (!schema) return out;
  for (std::size_t i = 0; i < schema->fields.size() && i < values.size(); ++i) {
    out[schema->fields[i].name] = BigQueryValueToJson(schema->fields[i], values[i]);
  }
  return out;
}

}  // namespace gcpstream::bigquery
