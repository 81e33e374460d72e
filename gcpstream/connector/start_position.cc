#include "gcpstream/connector/start_position.h"

#include <fmt/format.h>

namespace gcpstream::connector {

absl::Time StartPosition::resolve(absl::Time now) const {
  switch (kind_) {
    case Kind::kLatest:
      return now;
    case Kind::kAbsolute:
      return at_;
    case Kind::kRelative:
      return now - ago_;
  }
  return now;
}

std::string StartPosition::describe() const {
  switch (kind_) {
    case Kind::kLatest:
      return "latest";
    case Kind::kAbsolute:
      return "absolute " + absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*SZ", at_, absl::UTCTimeZone());
    case Kind::kRelative:
      return fmt::format("relative {} ago", absl::FormatDuration(ago_));
  }
  return "?";
}

absl::Status StartPosition::validate(std::string_view source) const {
  if (kind_ == Kind::kRelative && (ago_ < absl::ZeroDuration() || ago_ > absl::Hours(24 * 3650))) {
    return absl::InvalidArgumentError(
        fmt::format("{}: a relative start position must lie in the past, at most 3650 days "
                    "before the start (a finite, non-negative offset)",
                    source));
  }
  if (kind_ == Kind::kAbsolute &&
      (at_ < absl::FromCivil(absl::CivilSecond(1, 1, 1), absl::UTCTimeZone()) ||
       at_ > absl::FromCivil(absl::CivilSecond(9999, 12, 31, 23, 59, 59), absl::UTCTimeZone()))) {
    return absl::InvalidArgumentError(
        fmt::format("{}: an absolute start position must lie between years 1 and 9999", source));
  }
  return absl::OkStatus();
}

}  // namespace gcpstream::connector
