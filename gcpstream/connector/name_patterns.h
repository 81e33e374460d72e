#ifndef GCPSTREAM_CONNECTOR_NAME_PATTERNS_H_
#define GCPSTREAM_CONNECTOR_NAME_PATTERNS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace re2 {
class RE2;
}

namespace gcpstream::connector {

// An include list or an exclude list of RE2 patterns, each matched against a whole name (never
// a substring), as the change-stream sources' output filters use them. Immutable once built;
// copies share the compiled patterns; thread-safe.
class NamePatterns {
 public:
  NamePatterns() = default;  // keeps every name
  // INVALID_ARGUMENT, prefixed with `source` and naming the option, when both lists are given
  // or a pattern does not compile (with RE2's reason).
  static absl::StatusOr<NamePatterns> Create(std::string_view source,
                                             const std::vector<std::string>& include,
                                             std::string_view include_option,
                                             const std::vector<std::string>& exclude,
                                             std::string_view exclude_option);
  // With an include list: whether some pattern matches; with an exclude list: whether none
  // does; with neither: true.
  bool keeps(const std::string& name) const;
  // Whether any pattern is configured.
  bool active() const { return patterns_ && !patterns_->empty(); }

 private:
  std::shared_ptr<const std::vector<std::unique_ptr<re2::RE2>>> patterns_;
  bool include_ = false;
};

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_NAME_PATTERNS_H_
