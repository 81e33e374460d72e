#include "gcpstream/pipeline/spanner_mutation_mapper.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "absl/strings/escaping.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::pipeline {
namespace {

namespace sp = google::spanner::v1;
using spanner::Value;

absl::StatusOr<Value> FromText(sp::TypeCode type, const std::string& text) {
  switch (type) {
    case sp::INT64: {
      std::int64_t v = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
        return absl::InvalidArgumentError(
            fmt::format("'{}' is not a 64-bit integer", text.substr(0, 64)));
      }
      return Value::Int64(v);
    }
    case sp::FLOAT64: {
      if (text == "NaN") return Value::Float64(std::nan(""));
      if (text == "Infinity") return Value::Float64(INFINITY);
      if (text == "-Infinity") return Value::Float64(-INFINITY);
      // Decimal only, as INT64 and NUMERIC: strtod alone would also take leading blanks and
      // hexadecimal ("0x1p3").
      const bool decimal = !text.empty() && text.find_first_of("xX") == std::string::npos &&
                           std::isspace(static_cast<unsigned char>(text.front())) == 0;
      char* end = nullptr;
      const double v = decimal ? std::strtod(text.c_str(), &end) : 0;
      if (!decimal || end != text.c_str() + text.size() || !std::isfinite(v)) {
        return absl::InvalidArgumentError(fmt::format(
            "'{}' is not a finite number (or NaN, Infinity, -Infinity)", text.substr(0, 64)));
      }
      return Value::Float64(v);
    }
    case sp::BOOL:
      if (text == "true") return Value::Bool(true);
      if (text == "false") return Value::Bool(false);
      return absl::InvalidArgumentError(
          fmt::format("'{}' is not true or false", text.substr(0, 64)));
    case sp::NUMERIC:
      return Value::Numeric(text);
    case sp::JSON:
      return Value::Json(text);
    case sp::BYTES: {
      // The text is the wire form, base64; the value is re-encoded in Spanner's padded form.
      std::string raw;
      if (!absl::Base64Unescape(text, &raw)) {
        return absl::InvalidArgumentError(
            fmt::format("'{}' is not base64 (a BYTES column takes its value base64-encoded)",
                        text.substr(0, 64)));
      }
      return Value::Bytes(raw);
    }
    case sp::DATE:
    case sp::TIMESTAMP: {
      google::protobuf::Value wire;
      wire.set_string_value(text);
      return Value::FromProto(spanner::MakeType(type), std::move(wire));
    }
    default:
      return Value::String(text);
  }
}

}  // namespace

const std::vector<std::string>& SpannerColumnTypes() {
  static const std::vector<std::string> kTypes = {
      "STRING", "INT64", "FLOAT64", "BOOL", "NUMERIC", "JSON", "BYTES", "DATE", "TIMESTAMP"};
  return kTypes;
}

absl::StatusOr<SpannerMutationMapper> SpannerMutationMapper::make(const SpannerMappingSpec& spec) {
  SpannerMutationMapper m;
  m.spec_ = spec;
  if (spec.operation == "insert") {
    m.op_ = spanner::Mutation::Op::kInsert;
  } else if (spec.operation == "update") {
    m.op_ = spanner::Mutation::Op::kUpdate;
  } else if (spec.operation == "replace") {
    m.op_ = spanner::Mutation::Op::kReplace;
  } else if (spec.operation == "insert_or_update") {
    m.op_ = spanner::Mutation::Op::kInsertOrUpdate;
  } else {
    return absl::InvalidArgumentError(fmt::format(
        "operation '{}' is not one of insert, update, insert_or_update, replace", spec.operation));
  }
  for (const auto& c : spec.columns) {
    Column col;
    col.name = c.name;
    GCP_ASSIGN_OR_RETURN(col.value, RecordTemplate::parse(c.value));
    if (c.value.size() > 2 && c.value.front() == '{' && c.value.back() == '}' &&
        c.value.find_first_of("{}", 1) == c.value.size() - 1) {
      col.single_field = c.value.substr(1, c.value.size() - 2);
    }
    if (!sp::TypeCode_Parse(c.type, &col.type) ||
        std::find(SpannerColumnTypes().begin(), SpannerColumnTypes().end(), c.type) ==
            SpannerColumnTypes().end()) {
      return absl::InvalidArgumentError(fmt::format("column {}: type '{}' is not one of {}", c.name,
                                                    c.type, fmt::join(SpannerColumnTypes(), ", ")));
    }
    m.columns_.push_back(std::move(col));
  }
  return m;
}

absl::StatusOr<Value> SpannerMutationMapper::value_of(const Column& c,
                                                      const PipelineRecord& record) const {
  if (!c.single_field.empty()) {
    auto it = record.fields.find(c.single_field);
    if (it != record.fields.end()) {
      if (it->is_null()) return Value::Null(spanner::MakeType(c.type));
      // An object or array is its JSON; every other value is read from its text, so a string
      // under JSON must hold a JSON document (CSV fields are all strings).
      if (c.type == sp::JSON && it->is_structured()) return Value::Json(it->dump());
    }
  }
  GCP_ASSIGN_OR_RETURN(std::string text, c.value.render(record));
  return FromText(c.type, text);
}

absl::StatusOr<spanner::Mutation> SpannerMutationMapper::map(const PipelineRecord& record) const {
  spanner::Mutation::Builder builder(op_, spec_.table);
  for (const auto& c : columns_) {
    absl::StatusOr<Value> v = value_of(c, record);
    if (!v.ok()) {
      return absl::InvalidArgumentError(fmt::format("to_spanner column {} ({}): {}", c.name,
                                                    sp::TypeCode_Name(c.type),
                                                    v.status().message()));
    }
    builder.Set(c.name, *std::move(v));
  }
  return std::move(builder).Build();
}

}  // namespace gcpstream::pipeline
