#ifndef GCPSTREAM_PIPELINE_YAML_FIELDS_H_
#define GCPSTREAM_PIPELINE_YAML_FIELDS_H_

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace gcpstream::pipeline {

// One option a pipeline file was read for: its dotted path, the value in effect, and the
// default that applies when the file leaves it out ("required" for mandatory keys).
// `describe` prints them all.
struct OptionRecord {
  std::string path;
  std::string value;          // effective value as text ("" when unset and without default)
  std::string default_value;  // "required", "unset", or the default's text
  bool set = false;           // whether the file gave it
  std::string location;       // "pipeline.yaml:14:5" where the file gave it; "" when not set
};

// State shared by every YamlMap of one parse: the file name for messages, the first error,
// the options read, and the environment lookup for ${VAR} substitution.
//
// Not thread-safe; one parse uses one context.
class YamlContext {
 public:
  // `file` prefixes every message ("pipeline.yaml:12:3: ..."). `env` returns a variable's
  // value or nullopt; by default the process environment (getenv).
  explicit YamlContext(std::string file,
                       std::function<std::optional<std::string>(const std::string&)> env = {});

  // Keeps the first error only: later ones are usually consequences.
  void fail(const YAML::Mark& mark, const std::string& path, const std::string& what);
  const absl::Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }

  void record(OptionRecord r) { options_.push_back(std::move(r)); }
  const std::vector<OptionRecord>& options() const { return options_; }

  // The scalar's text with ${VAR} / ${VAR:-default} substituted and "$${" kept as a literal
  // "${". A variable that is unset without a default is an error naming it (and nullopt).
  // Values taken from the environment are never echoed: messages and describe's listing name
  // the variable instead (see redact). A value that is not valid UTF-8 is an error at its
  // position.
  std::optional<std::string> substitute(const YAML::Node& scalar, const std::string& path);
  // `text` with every value substituted from the environment at `path` replaced by the
  // reference that produced it (${NAME}).
  std::string redact(const std::string& path, std::string text) const;
  // Reports the first key repeated within a mapping, anywhere below `node`, and a file that
  // expands (through aliases) to more than kMaxYamlNodes values.
  void check_duplicate_keys(const YAML::Node& node, const std::string& path);
  static constexpr std::size_t kMaxYamlNodes = 100'000;

  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::function<std::optional<std::string>(const std::string&)> env_;
  absl::Status status_;
  std::vector<OptionRecord> options_;
  // path -> (value from the environment, the ${NAME} that produced it)
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> from_env_;
  std::size_t nodes_walked_ = 0;
};

// The allowed values of an integer option, inclusive.
struct IntRange {
  std::int64_t min;
  std::int64_t max;
  // Every value an int option (stored in 32 bits) can hold from `min` up.
  static constexpr IntRange int32_from(std::int64_t min) { return {min, 2'147'483'647}; }
};

// The allowed values of a duration option, inclusive; `or_zero` also allows 0 (the option's
// "off", e.g. no checkpointing).
struct DurationRange {
  std::chrono::milliseconds min;
  std::chrono::milliseconds max;
  bool or_zero = false;
};

// A strict reader of one YAML mapping. Each getter names a key it allows, converts the value
// (with ${VAR} substitution), records the option, and reports a wrong type to the context as
// "file:line:col: path: expected ..., got ...". finish() then reports any key no getter asked
// for, with the list of allowed keys. Getters return the default after an error, so a parse
// can continue to its end and report the first problem.
//
// The mapping may be absent (a null node): every getter then returns its default.
class YamlMap {
 public:
  // `node` must be a mapping or null; anything else is an error naming `path`.
  YamlMap(YamlContext& ctx, YAML::Node node, std::string path);

  bool has(const std::string& key) const;
  bool present() const { return node_.IsDefined() && !node_.IsNull(); }
  const YAML::Mark mark() const { return node_.Mark(); }
  const std::string& path() const { return path_; }
  YamlContext& context() { return ctx_; }

  // Strings. `required_string` records an error when the key is missing or empty.
  std::string string(const std::string& key, const std::string& def);
  std::optional<std::string> optional_string(const std::string& key);
  std::string required_string(const std::string& key);
  // One of `allowed` (exact spelling); errors list them.
  std::string choice(const std::string& key, const std::string& def,
                     const std::vector<std::string>& allowed);
  std::optional<std::string> optional_choice(const std::string& key,
                                             const std::vector<std::string>& allowed);

  // Integers and durations are always range-checked: a value outside `range` is reported with
  // the allowed range (never truncated, wrapped or clamped).
  std::int64_t integer(const std::string& key, std::int64_t def, IntRange range);
  std::optional<std::int64_t> optional_integer(const std::string& key,
                                               const std::string& default_text, IntRange range);
  double number(const std::string& key, double def);
  bool boolean(const std::string& key, bool def);
  std::chrono::milliseconds duration(const std::string& key, std::chrono::milliseconds def,
                                     DurationRange range);
  std::optional<std::chrono::milliseconds> optional_duration(const std::string& key,
                                                             const std::string& default_text,
                                                             DurationRange range);
  std::vector<std::string> string_list(const std::string& key);

  // A nested mapping (absent: an empty one).
  YamlMap map(const std::string& key);
  // The raw node of a key whose shape the caller checks (lists of mappings, scalar-or-map).
  YAML::Node node(const std::string& key);
  // Reports a failed validation of the key's value at the key's position.
  void check(const std::string& key, const absl::Status& status);

  // Reports the first key of the mapping no getter asked for, then the first required key that
  // was missing. Call after every getter.
  void finish();

  // The dotted path of a key of this mapping.
  std::string key_path(const std::string& key) const;

 private:
  // The key's scalar text after substitution, or nullopt when absent (or after an error).
  std::optional<std::string> scalar(const std::string& key, const char* expected);
  // `text` parsed and checked against `range`; failures are reported at the key.
  std::optional<std::chrono::milliseconds> checked_duration(const std::string& key,
                                                            const std::string& text,
                                                            DurationRange range);
  void report_unknown_keys();
  // Read-only lookup (never inserts into the document).
  YAML::Node get(const std::string& key) const;
  void note(const std::string& key, const std::string& value, const std::string& def, bool set);

  YamlContext& ctx_;
  YAML::Node node_;
  std::string path_;
  std::set<std::string> allowed_;
  std::vector<std::string> allowed_order_;
  std::vector<std::string> missing_;
};

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_YAML_FIELDS_H_
