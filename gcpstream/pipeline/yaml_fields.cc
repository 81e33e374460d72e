#include "gcpstream/pipeline/yaml_fields.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string_view>

#include "gcpstream/pipeline/duration_text.h"
#include "gcpstream/util/utf8.h"

namespace gcpstream::pipeline {
namespace {

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) {
    if (!out.empty()) out += ", ";
    out += i;
  }
  return out;
}

const char* KindName(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Null:
      return "nothing (null)";
    default:
      return "nothing";
  }
}

}  // namespace

YamlContext::YamlContext(std::string file,
                         std::function<std::optional<std::string>(const std::string&)> env)
    : file_(std::move(file)), env_(std::move(env)) {
  if (!env_) {
    env_ = [](const std::string& name) -> std::optional<std::string> {
      const char* v = std::getenv(name.c_str());
      if (v == nullptr) return std::nullopt;
      return std::string(v);
    };
  }
}

void YamlContext::fail(const YAML::Mark& mark, const std::string& path, const std::string& what) {
  if (!status_.ok()) return;
  std::string where = file_;
  if (!mark.is_null()) where += fmt::format(":{}:{}", mark.line + 1, mark.column + 1);
  status_ = absl::InvalidArgumentError(
      fmt::format("{}: {}{}", where, path.empty() ? "" : path + ": ", redact(path, what)));
}

std::string YamlContext::redact(const std::string& path, std::string text) const {
  auto it = from_env_.find(path);
  if (it == from_env_.end()) return text;
  // Whole occurrences only: a value "0" must not turn "10min" in the same message into
  // "1${VAR}min".
  auto word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.';
  };
  for (const auto& [value, reference] : it->second) {
    if (value.empty()) continue;
    for (std::size_t at = text.find(value); at != std::string::npos;) {
      const std::size_t end = at + value.size();
      const bool whole = (at == 0 || !word(text[at - 1]) || !word(value.front())) &&
                         (end == text.size() || !word(text[end]) || !word(value.back()));
      if (!whole) {
        at = text.find(value, at + 1);
        continue;
      }
      text.replace(at, value.size(), reference);
      at = text.find(value, at + reference.size());
    }
  }
  return text;
}

void YamlContext::check_duplicate_keys(const YAML::Node& node, const std::string& path) {
  if (!ok()) return;
  // Aliases are walked as many times as they are used: a file of nested aliases (a "billion
  // laughs") would make this walk, and any later one, run for ever. No pipeline comes close.
  if (++nodes_walked_ > kMaxYamlNodes) {
    fail(node.Mark(), path,
         fmt::format("the file expands to more than {} values (through anchors and aliases?); a "
                     "pipeline file is far smaller",
                     kMaxYamlNodes));
    return;
  }
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      check_duplicate_keys(node[i], fmt::format("{}[{}]", path, i));
    }
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, YAML::Mark> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
    const std::string child = path.empty() ? key : path + "." + key;
    auto [first, inserted] = seen.emplace(key, it->first.Mark());
    if (!inserted) {
      fail(it->first.Mark(), child,
           fmt::format("duplicate key '{}' (first given at line {}); a key may appear once", key,
                       first->second.line + 1));
      return;
    }
    check_duplicate_keys(it->second, child);
  }
}

std::optional<std::string> YamlContext::substitute(const YAML::Node& scalar,
                                                   const std::string& path) {
  const std::string& in = scalar.Scalar();
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in.compare(i, 3, "$${") == 0) {
      out += "${";
      i += 2;
      continue;
    }
    if (in.compare(i, 2, "${") != 0) {
      out += in[i];
      continue;
    }
    const std::size_t close = in.find('}', i + 2);
    if (close == std::string::npos) {
      fail(scalar.Mark(), path, fmt::format("unterminated '${{' in \"{}\"", in));
      return std::nullopt;
    }
    std::string name = in.substr(i + 2, close - i - 2);
    std::optional<std::string> fallback;
    if (auto sep = name.find(":-"); sep != std::string::npos) {
      fallback = name.substr(sep + 2);
      name = name.substr(0, sep);
    }
    std::optional<std::string> value = env_(name);
    const bool from_env = value && !(value->empty() && fallback);
    if (!value || (value->empty() && fallback)) value = fallback;
    if (from_env && !value->empty()) from_env_[path].emplace_back(*value, "${" + name + "}");
    if (!value) {
      fail(scalar.Mark(), path,
           fmt::format("environment variable {} is not set (write ${{{}:-default}} to give a "
                       "default)",
                       name, name));
      return std::nullopt;
    }
    out += *value;
    i = close;
  }
  if (auto bad = util::InvalidUtf8At(out)) {
    fail(scalar.Mark(), path,
         fmt::format("the value is not valid UTF-8 (byte {} of the value); pipeline files and "
                     "the variables they use must be UTF-8",
                     *bad));
    return std::nullopt;
  }
  return out;
}

YamlMap::YamlMap(YamlContext& ctx, YAML::Node node, std::string path)
    : ctx_(ctx), node_(std::move(node)), path_(std::move(path)) {
  if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap()) {
    ctx_.fail(node_.Mark(), path_, fmt::format("expected a mapping, got {}", KindName(node_)));
    node_ = YAML::Node();
  }
}

void YamlMap::check(const std::string& key, const absl::Status& status) {
  if (status.ok()) return;
  ctx_.fail(get(key).Mark(), key_path(key), std::string(status.message()));
}

std::string YamlMap::key_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

bool YamlMap::has(const std::string& key) const {
  if (!node_.IsDefined() || !node_.IsMap()) return false;
  return get(key).IsDefined();
}

void YamlMap::note(const std::string& key, const std::string& value, const std::string& def,
                   bool set) {
  std::string location;
  if (set && node_.IsDefined() && node_.IsMap()) {
    const YAML::Mark mark = get(key).Mark();
    if (!mark.is_null()) {
      location = fmt::format("{}:{}:{}", ctx_.file(), mark.line + 1, mark.column + 1);
    }
  }
  ctx_.record(OptionRecord{key_path(key), ctx_.redact(key_path(key), value), def, set,
                           std::move(location)});
}

std::optional<std::string> YamlMap::scalar(const std::string& key, const char* expected) {
  if (allowed_.insert(key).second) allowed_order_.push_back(key);
  if (!node_.IsDefined() || !node_.IsMap()) return std::nullopt;
  const YAML::Node v = get(key);
  if (!v.IsDefined() || v.IsNull()) return std::nullopt;
  if (!v.IsScalar()) {
    ctx_.fail(v.Mark(), key_path(key), fmt::format("expected {}, got {}", expected, KindName(v)));
    return std::nullopt;
  }
  return ctx_.substitute(v, key_path(key));
}

std::string YamlMap::string(const std::string& key, const std::string& def) {
  auto v = scalar(key, "a string");
  note(key, v.value_or(def), def.empty() ? "unset" : def, v.has_value());
  return v.value_or(def);
}

std::optional<std::string> YamlMap::optional_string(const std::string& key) {
  auto v = scalar(key, "a string");
  note(key, v.value_or(""), "unset", v.has_value());
  return v;
}

std::string YamlMap::required_string(const std::string& key) {
  auto v = scalar(key, "a string");
  note(key, v.value_or(""), "required", v.has_value());
  if (v && v->empty()) {
    ctx_.fail(get(key).Mark(), key_path(key), "is empty; a value is required");
    return "";
  }
  // Reported by finish(), after unknown keys: a misspelt key is the better explanation.
  if (!v) missing_.push_back(key);
  return v.value_or("");
}

std::string YamlMap::choice(const std::string& key, const std::string& def,
                            const std::vector<std::string>& allowed) {
  auto v = scalar(key, "one of the allowed values");
  note(key, v.value_or(def), def, v.has_value());
  if (!v) return def;
  for (const auto& a : allowed) {
    if (*v == a) return *v;
  }
  ctx_.fail(get(key).Mark(), key_path(key),
            fmt::format("'{}' is not allowed; allowed values: {}", *v, Join(allowed)));
  return def;
}

std::optional<std::string> YamlMap::optional_choice(const std::string& key,
                                                    const std::vector<std::string>& allowed) {
  auto v = scalar(key, "one of the allowed values");
  note(key, v.value_or(""), "unset", v.has_value());
  if (!v) return std::nullopt;
  for (const auto& a : allowed) {
    if (*v == a) return v;
  }
  ctx_.fail(get(key).Mark(), key_path(key),
            fmt::format("'{}' is not allowed; allowed values: {}", *v, Join(allowed)));
  return std::nullopt;
}

std::optional<std::int64_t> YamlMap::optional_integer(const std::string& key,
                                                      const std::string& default_text,
                                                      IntRange range) {
  auto v = scalar(key, "an integer");
  note(key, v.value_or(""), default_text, v.has_value());
  if (!v) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long parsed = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || end == nullptr || *end != '\0' || errno == ERANGE) {
    ctx_.fail(
        get(key).Mark(), key_path(key),
        fmt::format("expected an integer, got '{}' (allowed: {}..{})", *v, range.min, range.max));
    return std::nullopt;
  }
  if (parsed < range.min || parsed > range.max) {
    ctx_.fail(get(key).Mark(), key_path(key),
              fmt::format("{} is out of range: allowed {}..{}", parsed, range.min, range.max));
    return std::nullopt;
  }
  return static_cast<std::int64_t>(parsed);
}

std::int64_t YamlMap::integer(const std::string& key, std::int64_t def, IntRange range) {
  return optional_integer(key, std::to_string(def), range).value_or(def);
}

double YamlMap::number(const std::string& key, double def) {
  auto v = scalar(key, "a number");
  note(key, v.value_or(fmt::format("{}", def)), fmt::format("{}", def), v.has_value());
  if (!v) return def;
  char* end = nullptr;
  const double parsed = std::strtod(v->c_str(), &end);
  if (v->empty() || end == nullptr || *end != '\0' || !std::isfinite(parsed)) {
    ctx_.fail(get(key).Mark(), key_path(key), fmt::format("expected a number, got '{}'", *v));
    return def;
  }
  return parsed;
}

bool YamlMap::boolean(const std::string& key, bool def) {
  auto v = scalar(key, "true or false");
  note(key, v.value_or(def ? "true" : "false"), def ? "true" : "false", v.has_value());
  if (!v) return def;
  if (*v == "true") return true;
  if (*v == "false") return false;
  ctx_.fail(get(key).Mark(), key_path(key), fmt::format("expected true or false, got '{}'", *v));
  return def;
}

std::optional<std::chrono::milliseconds> YamlMap::checked_duration(const std::string& key,
                                                                   const std::string& text,
                                                                   DurationRange range) {
  auto d = ParseDuration(text);
  if (!d.ok()) {
    ctx_.fail(get(key).Mark(), key_path(key), std::string(d.status().message()));
    return std::nullopt;
  }
  if ((d->count() == 0 && range.or_zero) || (*d >= range.min && *d <= range.max)) return *d;
  ctx_.fail(get(key).Mark(), key_path(key),
            fmt::format("'{}' is out of range: allowed {}{}..{}", text,
                        range.or_zero ? "0 (off) or " : "", FormatDuration(range.min),
                        FormatDuration(range.max)));
  return std::nullopt;
}

std::optional<std::chrono::milliseconds> YamlMap::optional_duration(const std::string& key,
                                                                    const std::string& default_text,
                                                                    DurationRange range) {
  auto v = scalar(key, "a duration");
  note(key, v.value_or(""), default_text, v.has_value());
  if (!v) return std::nullopt;
  return checked_duration(key, *v, range);
}

std::chrono::milliseconds YamlMap::duration(const std::string& key, std::chrono::milliseconds def,
                                            DurationRange range) {
  auto v = scalar(key, "a duration");
  note(key, v.value_or(FormatDuration(def)), FormatDuration(def), v.has_value());
  if (!v) return def;
  return checked_duration(key, *v, range).value_or(def);
}

std::vector<std::string> YamlMap::string_list(const std::string& key) {
  if (allowed_.insert(key).second) allowed_order_.push_back(key);
  std::vector<std::string> out;
  const YAML::Node v = node(key);
  if (!v.IsDefined() || v.IsNull()) {
    note(key, "[]", "[]", false);
    return out;
  }
  if (!v.IsSequence()) {
    ctx_.fail(v.Mark(), key_path(key), fmt::format("expected a list, got {}", KindName(v)));
    return out;
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    const YAML::Node item = v[i];
    const std::string item_path = fmt::format("{}[{}]", key_path(key), i);
    if (!item.IsScalar()) {
      ctx_.fail(item.Mark(), item_path, fmt::format("expected a string, got {}", KindName(item)));
      return out;
    }
    auto s = ctx_.substitute(item, item_path);
    if (!s) return out;
    out.push_back(*s);
  }
  std::string shown = "[";
  for (const auto& s : out) shown += (shown.size() > 1 ? ", " : "") + s;
  note(key, shown + "]", "[]", true);
  return out;
}

YamlMap YamlMap::map(const std::string& key) { return YamlMap(ctx_, node(key), key_path(key)); }

YAML::Node YamlMap::node(const std::string& key) {
  if (allowed_.insert(key).second) allowed_order_.push_back(key);
  return get(key);
}

YAML::Node YamlMap::get(const std::string& key) const {
  if (!node_.IsDefined() || !node_.IsMap()) return YAML::Node();
  const YAML::Node& n = node_;
  return n[key];
}

void YamlMap::finish() {
  report_unknown_keys();
  for (const auto& key : missing_) {
    ctx_.fail(node_.IsDefined() ? node_.Mark() : YAML::Mark::null_mark(), key_path(key),
              "required key is missing");
  }
}

void YamlMap::report_unknown_keys() {
  if (!node_.IsDefined() || !node_.IsMap()) return;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string k = it->first.Scalar();
    if (allowed_.count(k) == 0) {
      ctx_.fail(it->first.Mark(), key_path(k),
                fmt::format("unknown key '{}'{}; allowed keys: {}", k,
                            path_.empty() ? "" : " in " + path_, Join(allowed_order_)));
      return;
    }
  }
}

}  // namespace gcpstream::pipeline
