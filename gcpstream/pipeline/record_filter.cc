#include "gcpstream/pipeline/record_filter.h"

#include <cstdlib>
#include <optional>

namespace gcpstream::pipeline {
namespace {

std::optional<double> AsNumber(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end != nullptr && *end == '\0') return d;
  }
  return std::nullopt;
}

// <0, 0, >0 like strcmp.
int Compare(const nlohmann::json& lhs, const nlohmann::json& rhs) {
  const bool numeric_side = lhs.is_number() || rhs.is_number();
  if (numeric_side) {
    auto a = AsNumber(lhs);
    auto b = AsNumber(rhs);
    if (a && b) return *a < *b ? -1 : (*a > *b ? 1 : 0);
  }
  const std::string a = FieldText(lhs);
  const std::string b = FieldText(rhs);
  return a.compare(b);
}

}  // namespace

bool Holds(const FieldComparison& c, const PipelineRecord& record) {
  const nlohmann::json* value = nullptr;
  nlohmann::json attribute;
  if (record.fields.is_object()) {
    auto it = record.fields.find(c.field);
    if (it != record.fields.end()) value = &*it;
  }
  if (value == nullptr) {
    auto attr = record.attributes.find(c.field);
    if (attr != record.attributes.end()) {
      attribute = attr->second;
      value = &attribute;
    }
  }
  using Op = FieldComparison::Op;
  if (c.op == Op::kExists) return value != nullptr;
  if (c.op == Op::kNotExists) return value == nullptr;
  if (value == nullptr) return c.op == Op::kNe;
  const int cmp = Compare(*value, c.value);
  switch (c.op) {
    case Op::kEq:
      return cmp == 0;
    case Op::kNe:
      return cmp != 0;
    case Op::kLt:
      return cmp < 0;
    case Op::kLe:
      return cmp <= 0;
    case Op::kGt:
      return cmp > 0;
    case Op::kGe:
      return cmp >= 0;
    default:
      return false;
  }
}

bool Passes(const TransformSpec& transform, const PipelineRecord& record) {
  for (const auto& c : transform.keep) {
    if (!Holds(c, record)) return false;
  }
  for (const auto& c : transform.drop) {
    if (Holds(c, record)) return false;
  }
  return true;
}

}  // namespace gcpstream::pipeline
