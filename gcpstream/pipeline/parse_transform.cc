// The `transform:` section of a pipeline file.
#include <fmt/format.h>

#include <limits>

#include "gcpstream/pipeline/cell_timestamp.h"
#include "gcpstream/pipeline/internal/spec_sections.h"
#include "gcpstream/pipeline/record_template.h"

namespace gcpstream::pipeline::internal {
namespace {

const std::vector<std::string> kOps = {"eq", "ne", "lt", "le", "gt", "ge", "exists", "not_exists"};

std::vector<FieldComparison> ParseComparisons(YamlMap& parent, const std::string& key) {
  std::vector<FieldComparison> out;
  YamlContext& ctx = parent.context();
  const YAML::Node list = parent.node(key);
  if (!list.IsDefined() || list.IsNull()) return out;
  if (!list.IsSequence()) {
    ctx.fail(list.Mark(), parent.key_path(key),
             "expected a list of {field, op, value} comparisons");
    return out;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    YamlMap m(ctx, list[i], fmt::format("{}[{}]", parent.key_path(key), i));
    FieldComparison c;
    c.field = m.required_string("field");
    const std::string op = m.choice("op", "eq", kOps);
    c.op = static_cast<FieldComparison::Op>(std::find(kOps.begin(), kOps.end(), op) - kOps.begin());
    const YAML::Node value = m.node("value");
    const bool needs_value = op != "exists" && op != "not_exists";
    if (needs_value) {
      if (!value.IsDefined() || !value.IsScalar()) {
        ctx.fail(list[i].Mark(), m.key_path("value"),
                 fmt::format("op {} needs a scalar value to compare with", op));
      } else if (auto text = ctx.substitute(value, m.key_path("value"))) {
        c.value = ScalarJson(value, *text);
      }
    } else if (value.IsDefined()) {
      ctx.fail(value.Mark(), m.key_path("value"), fmt::format("op {} takes no value", op));
    }
    m.finish();
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> ParseTemplateMap(YamlMap& parent,
                                                                  const std::string& key,
                                                                  bool bare_is_field) {
  std::vector<std::pair<std::string, std::string>> out;
  YamlContext& ctx = parent.context();
  const YAML::Node map = parent.node(key);
  if (!map.IsDefined() || map.IsNull()) return out;
  if (!map.IsMap()) {
    ctx.fail(map.Mark(), parent.key_path(key), "expected a mapping of name: template");
    return out;
  }
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string name = it->first.Scalar();
    const std::string path = parent.key_path(key) + "." + name;
    if (!it->second.IsScalar()) {
      ctx.fail(it->second.Mark(), path, "expected a field name or a template");
      continue;
    }
    auto text = ctx.substitute(it->second, path);
    if (!text) continue;
    std::string tmpl = *text;
    if (bare_is_field && tmpl.find('{') == std::string::npos) tmpl = "{" + tmpl + "}";
    if (auto parsed = RecordTemplate::parse(tmpl); !parsed.ok()) {
      ctx.fail(it->second.Mark(), path, std::string(parsed.status().message()));
    }
    ctx.record(OptionRecord{path, tmpl, "none", true});
    out.emplace_back(name, tmpl);
  }
  return out;
}

std::string CheckedTemplate(YamlMap& m, const std::string& key, bool required) {
  std::string text = required ? m.required_string(key) : m.optional_string(key).value_or("");
  // A value without placeholders names a field.
  if (!text.empty() && text.find('{') == std::string::npos) text = "{" + text + "}";
  if (!text.empty()) {
    if (auto parsed = RecordTemplate::parse(text); !parsed.ok()) {
      m.context().fail(m.mark(), m.key_path(key), std::string(parsed.status().message()));
    }
  }
  return text;
}

std::optional<TimestampSpec> ParseTimestamp(YamlMap& parent) {
  if (!parent.has("timestamp")) {
    parent.node("timestamp");
    parent.context().record(
        OptionRecord{parent.key_path("timestamp"), "", "unset (the writer's clock)", false});
    return std::nullopt;
  }
  YamlMap m = parent.map("timestamp");
  TimestampSpec spec;
  spec.field = m.required_string("field");
  spec.format = m.optional_string("format");
  const std::string unit = m.choice("unit", "ms", {"s", "ms", "us"});
  if (unit == "s") spec.unit = TimestampSpec::Unit::kSeconds;
  if (unit == "us") spec.unit = TimestampSpec::Unit::kMicros;
  const std::string offset = m.string("utc_offset", "UTC");
  if (auto parsed = ParseUtcOffset(offset); parsed.ok()) {
    spec.utc_offset = *parsed;
  } else {
    m.context().fail(m.mark(), m.key_path("utc_offset"), std::string(parsed.status().message()));
  }
  if (spec.format && m.has("unit")) {
    m.context().fail(m.mark(), m.key_path("unit"),
                     "give either format (text times) or unit (numbers), not both");
  }
  m.finish();
  return spec;
}

// A {service_account, <second>} token section, when present.
std::optional<std::pair<std::string, std::string>> ParseToken(YamlMap& parent,
                                                              const std::string& key,
                                                              const std::string& second) {
  if (!parent.has(key)) {
    parent.node(key);
    return std::nullopt;
  }
  YamlMap t = parent.map(key);
  std::pair<std::string, std::string> out{t.required_string("service_account"),
                                          t.string(second, "")};
  t.finish();
  return out;
}

CloudTasksMappingSpec ParseCloudTasksMapping(YamlMap& parent) {
  YamlMap c = parent.map("to_cloud_tasks");
  YamlContext& ctx = c.context();
  CloudTasksMappingSpec spec;
  std::string url = CheckedTemplate(c, "url", false);
  std::string uri = CheckedTemplate(c, "relative_uri", false);
  if (!url.empty()) spec.url = url;
  if (c.has("relative_uri")) spec.relative_uri = uri;
  if (spec.url.has_value() == spec.relative_uri.has_value()) {
    ctx.fail(c.mark(), c.path(),
             "give exactly one target: url (an HTTP URL template) or relative_uri (an App Engine "
             "path template)");
  }
  spec.method =
      c.choice("method", "POST", {"POST", "PUT", "PATCH", "GET", "HEAD", "DELETE", "OPTIONS"});
  if (spec.relative_uri && spec.method == "PATCH") {
    ctx.fail(c.mark(), c.key_path("method"), "App Engine tasks take no PATCH; use POST or PUT");
  }
  spec.body_field = c.optional_string("body_field");
  spec.headers = ParseTemplateMap(c, "headers", false);
  std::string id = CheckedTemplate(c, "task_id", false);
  if (!id.empty()) spec.task_id = id;
  spec.oidc_token = ParseToken(c, "oidc_token", "audience");
  spec.oauth_token = ParseToken(c, "oauth_token", "scope");
  if (spec.relative_uri && (spec.oidc_token || spec.oauth_token)) {
    ctx.fail(c.mark(), c.path(),
             "oidc_token and oauth_token are for HTTP targets; App Engine tasks carry App "
             "Engine's own identity");
  }
  spec.dispatch_deadline =
      c.optional_duration("dispatch_deadline", "unset (the service's 10 min)",
                          DurationRange{std::chrono::seconds(15), std::chrono::hours(24)});
  c.finish();
  return spec;
}

}  // namespace

TransformSpec ParseTransform(YamlMap m) {
  TransformSpec spec;
  YamlContext& ctx = m.context();
  spec.keep = ParseComparisons(m, "keep");
  spec.drop = ParseComparisons(m, "drop");
  if (m.has("ordinal")) {
    YamlMap o = m.map("ordinal");
    OrdinalSpec ord;
    ord.attribute = o.optional_string("attribute");
    ord.field = o.optional_string("field");
    // +-2^53: the numbers a JSON field holds exactly (a double's integers), and far from
    // overflowing when a record's position is added (INT64_MAX used to wrap around).
    constexpr std::int64_t kExact = std::int64_t{1} << 53;
    ord.start = o.integer("start", 0, IntRange{-kExact, kExact});
    if (!ord.attribute && !ord.field) {
      ctx.fail(o.mark(), o.path(), "give attribute (a string attribute) or field (a number)");
    }
    o.finish();
    spec.ordinal = ord;
  } else {
    m.node("ordinal");
  }
  if (m.has("to_bigtable")) {
    YamlMap b = m.map("to_bigtable");
    BigtableMappingSpec bt;
    bt.row_key = CheckedTemplate(b, "row_key", true);
    bt.family = b.required_string("family");
    bt.columns = ParseTemplateMap(b, "columns", true);
    if (bt.columns.empty()) {
      ctx.fail(b.mark(), b.key_path("columns"),
               "required: a mapping of qualifier: field (or template), at least one");
    }
    bt.timestamp = ParseTimestamp(b);
    bt.skip_missing_fields = b.boolean("skip_missing_fields", false);
    b.finish();
    spec.to_bigtable = std::move(bt);
  } else {
    m.node("to_bigtable");
  }
  if (m.has("to_pubsub")) {
    YamlMap p = m.map("to_pubsub");
    PubSubMappingSpec ps;
    ps.data_field = p.optional_string("data_field");
    ps.attributes = ParseTemplateMap(p, "attributes", true);
    ps.include_record_attributes = p.boolean("include_record_attributes", true);
    std::string key = CheckedTemplate(p, "ordering_key", false);
    if (!key.empty()) ps.ordering_key = key;
    p.finish();
    spec.to_pubsub = std::move(ps);
  } else {
    m.node("to_pubsub");
  }
  if (m.has("to_cloud_tasks")) {
    spec.to_cloud_tasks = ParseCloudTasksMapping(m);
  } else {
    m.node("to_cloud_tasks");
  }
  m.finish();
  return spec;
}

}  // namespace gcpstream::pipeline::internal
