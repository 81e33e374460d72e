#include "gcpstream/connector/name_patterns.h"

#include <fmt/format.h>
#include <re2/re2.h>

namespace gcpstream::connector {

absl::StatusOr<NamePatterns> NamePatterns::Create(std::string_view source,
                                                  const std::vector<std::string>& include,
                                                  std::string_view include_option,
                                                  const std::vector<std::string>& exclude,
                                                  std::string_view exclude_option) {
  if (!include.empty() && !exclude.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {} and {} cannot both be set; use one of them", source, include_option,
                    exclude_option));
  }
  const bool is_include = !include.empty();
  const auto& list = is_include ? include : exclude;
  const std::string_view option = is_include ? include_option : exclude_option;
  auto patterns = std::make_shared<std::vector<std::unique_ptr<re2::RE2>>>();
  for (const auto& pattern : list) {
    RE2::Options options;
    options.set_log_errors(false);
    auto re = std::make_unique<re2::RE2>(pattern, options);
    if (!re->ok()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: {} pattern \"{}\" is not a valid regular expression: {}", source, option,
                      pattern, re->error()));
    }
    patterns->push_back(std::move(re));
  }
  NamePatterns out;
  out.patterns_ = std::move(patterns);
  out.include_ = is_include;
  return out;
}

bool NamePatterns::keeps(const std::string& name) const {
  if (!active()) return true;
  for (const auto& re : *patterns_) {
    if (re2::RE2::FullMatch(name, *re)) return include_;
  }
  return !include_;
}

}  // namespace gcpstream::connector
