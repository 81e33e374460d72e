// The `transform:` section of a pipeline file.
#include <fmt/format.h>

#include <limits>
#include <set>

#include "absl/strings/ascii.h"
#include "gcpstream/pipeline/cell_timestamp.h"
#include "gcpstream/pipeline/internal/spec_sections.h"
#include "gcpstream/pipeline/record_template.h"
#include "gcpstream/pipeline/spanner_mutation_mapper.h"
#include "gcpstream/tasks/sink/task_fields.h"

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

// A template option. With `bare_is_field`, a value without placeholders names a field
// ("origin" = "{origin}"); without it, such a value is literal text (a fixed URL).
std::string CheckedTemplate(YamlMap& m, const std::string& key, bool required,
                            bool bare_is_field = true) {
  std::string text = required ? m.required_string(key) : m.optional_string(key).value_or("");
  if (bare_is_field && !text.empty() && text.find('{') == std::string::npos) {
    text = "{" + text + "}";
  }
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

// `to_spanner.columns`: name: template (a STRING), or name: {value: template, type: T}.
SpannerMappingSpec ParseSpannerMapping(YamlMap& parent) {
  YamlMap s = parent.map("to_spanner");
  YamlContext& ctx = s.context();
  SpannerMappingSpec spec;
  spec.table = s.required_string("table");
  spec.operation = s.choice("operation", "insert_or_update",
                            {"insert", "update", "insert_or_update", "replace"});
  const YAML::Node columns = s.node("columns");
  const std::string path = s.key_path("columns");
  if (!columns.IsDefined() || !columns.IsMap() || columns.size() == 0) {
    ctx.fail(s.mark(), path,
             "required: a mapping of column: field (or template), or column: {value, type}; at "
             "least one");
  } else {
    // Spanner compares column names without regard to case.
    std::set<std::string> seen;
    for (auto it = columns.begin(); it != columns.end(); ++it) {
      SpannerMappingSpec::Column column;
      column.name = it->first.Scalar();
      const std::string column_path = path + "." + column.name;
      if (column.name.empty() || column.name.size() > 128) {
        ctx.fail(it->first.Mark(), column_path, "a Spanner column name has 1 to 128 characters");
        continue;
      }
      if (!seen.insert(absl::AsciiStrToLower(column.name)).second) {
        ctx.fail(it->first.Mark(), column_path,
                 "names a column already mapped: Spanner column names are case-insensitive");
        continue;
      }
      if (it->second.IsMap()) {
        YamlMap c(ctx, it->second, column_path);
        column.value = CheckedTemplate(c, "value", true);
        column.type = c.choice("type", "STRING", SpannerColumnTypes());
        c.finish();
      } else if (it->second.IsScalar()) {
        auto text = ctx.substitute(it->second, column_path);
        if (!text) continue;
        column.value = text->find('{') == std::string::npos ? "{" + *text + "}" : *text;
        if (auto parsed = RecordTemplate::parse(column.value); !parsed.ok()) {
          ctx.fail(it->second.Mark(), column_path, std::string(parsed.status().message()));
        }
        ctx.record(OptionRecord{column_path, column.value, "none", true});
      } else {
        ctx.fail(it->second.Mark(), column_path,
                 "expected a field name, a template, or {value, type}");
        continue;
      }
      spec.columns.push_back(std::move(column));
    }
  }
  s.finish();
  return spec;
}

CloudTasksMappingSpec ParseCloudTasksMapping(YamlMap& parent) {
  YamlMap c = parent.map("to_cloud_tasks");
  YamlContext& ctx = c.context();
  CloudTasksMappingSpec spec;
  // URLs are literal unless they hold placeholders: "https://h.example.com/x" is a fixed URL.
  if (c.has("url")) spec.url = CheckedTemplate(c, "url", false, false);
  if (c.has("relative_uri")) spec.relative_uri = CheckedTemplate(c, "relative_uri", false, false);
  if (spec.url.has_value() == spec.relative_uri.has_value()) {
    ctx.fail(c.mark(), c.path(),
             "give exactly one target: url (an HTTP URL template) or relative_uri (an App Engine "
             "path template)");
  }
  // A target without placeholders is checked now, where the file can say where it is.
  if (spec.url && !spec.url->empty() && spec.url->find('{') == std::string::npos) {
    c.check("url", tasks::ValidateHttpUrl(*spec.url));
  }
  if (spec.relative_uri && spec.relative_uri->find('{') == std::string::npos) {
    c.check("relative_uri", tasks::ValidateRelativeUri(*spec.relative_uri));
  }
  spec.method =
      c.choice("method", "POST", {"POST", "PUT", "PATCH", "GET", "HEAD", "DELETE", "OPTIONS"});
  if (spec.relative_uri && spec.method == "PATCH") {
    ctx.fail(c.mark(), c.key_path("method"), "App Engine tasks take no PATCH; use POST or PUT");
  }
  spec.body_field = c.optional_string("body_field");
  spec.headers = ParseTemplateMap(c, "headers", false);
  for (const auto& [name, value] : spec.headers) {
    if (spec.relative_uri) c.check("headers", tasks::ValidateAppEngineHeader(name));
    c.check("headers", tasks::ValidateHeaderName(name));
  }
  // A bare task_id names a field, like row_key. Present but empty is an error, not "unnamed":
  // an empty ${VAR} must not switch deduplication off silently.
  if (c.has("task_id")) {
    spec.task_id = CheckedTemplate(c, "task_id", false);
    if (spec.task_id->empty()) {
      ctx.fail(c.mark(), c.key_path("task_id"),
               "is empty; remove it for unnamed tasks, or give the deduplication key's template");
    }
  }
  spec.oidc_token = ParseToken(c, "oidc_token", "audience");
  spec.oauth_token = ParseToken(c, "oauth_token", "scope");
  if (spec.relative_uri && (spec.oidc_token || spec.oauth_token)) {
    ctx.fail(c.mark(), c.path(),
             "oidc_token and oauth_token are for HTTP targets; App Engine tasks carry App "
             "Engine's own identity");
  }
  if (spec.oidc_token && spec.oauth_token) {
    ctx.fail(c.mark(), c.key_path("oauth_token"),
             "oidc_token and oauth_token cannot both be set: a task carries one token");
  }
  spec.dispatch_deadline =
      c.optional_duration("dispatch_deadline", "unset (the service's 10 min)",
                          DurationRange{std::chrono::seconds(15), std::chrono::hours(24)});
  if (spec.dispatch_deadline) {
    c.check("dispatch_deadline", tasks::ValidateDispatchDeadline(*spec.dispatch_deadline,
                                                                 spec.relative_uri.has_value()));
  }
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
    // A bare integer adds that constant (`delayed: 1` counts records); another bare word names
    // a field.
    bt.add_to_cell = ParseTemplateMap(b, "add_to_cell", false);
    for (auto& [qualifier, tmpl] : bt.add_to_cell) {
      const bool literal =
          !tmpl.empty() && tmpl.find_first_not_of("-0123456789") == std::string::npos;
      if (!literal && tmpl.find('{') == std::string::npos) tmpl = "{" + tmpl + "}";
    }
    bt.increment = ParseTemplateMap(b, "increment", false);
    for (auto& [qualifier, tmpl] : bt.increment) {
      const bool literal =
          !tmpl.empty() && tmpl.find_first_not_of("-0123456789") == std::string::npos;
      if (!literal && tmpl.find('{') == std::string::npos) tmpl = "{" + tmpl + "}";
    }
    bt.append = ParseTemplateMap(b, "append", true);
    bt.otherwise = ParseTemplateMap(b, "otherwise", true);
    if (b.has("when")) {
      const YAML::Node when = b.node("when");
      BigtableMappingSpec::Predicate p;
      if (when.IsScalar() && when.Scalar() == "row_exists") {
        p.kind = BigtableMappingSpec::Predicate::Kind::kRowExists;
        bt.when = p;
      } else if (when.IsMap()) {
        YamlMap w(ctx, when, b.key_path("when"));
        p.qualifier = w.required_string("qualifier");
        if (auto equals = w.optional_string("equals")) {
          p.kind = BigtableMappingSpec::Predicate::Kind::kLatestValueEquals;
          p.value = *equals;
          if (auto parsed = RecordTemplate::parse(p.value); !parsed.ok()) {
            w.check("equals", parsed.status());
          }
        } else {
          p.kind = BigtableMappingSpec::Predicate::Kind::kCellExists;
        }
        w.finish();
        bt.when = p;
      } else {
        ctx.fail(when.Mark(), b.key_path("when"),
                 "expected row_exists, {qualifier} (the cell exists) or {qualifier, equals} (its "
                 "newest value equals the template)");
      }
    } else {
      b.node("when");
    }
    if (bt.columns.empty() && bt.add_to_cell.empty() && bt.increment.empty() && bt.append.empty() &&
        bt.otherwise.empty()) {
      ctx.fail(b.mark(), b.key_path("columns"),
               "required: a mapping of qualifier: field (or template), at least one (or "
               "add_to_cell, increment, append, otherwise)");
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
  if (m.has("to_spanner")) {
    spec.to_spanner = ParseSpannerMapping(m);
  } else {
    m.node("to_spanner");
  }
  m.finish();
  return spec;
}

}  // namespace gcpstream::pipeline::internal
