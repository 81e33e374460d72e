#ifndef GCPSTREAM_UTIL_ABSL_FMT_H_
#define GCPSTREAM_UTIL_ABSL_FMT_H_

#include <fmt/format.h>

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

// Debian's abseil has its own string_view type (not std::string_view): teach fmt to print it,
// and absl::Status (as "CODE: message").
template <>
struct fmt::formatter<absl::string_view> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(absl::string_view s, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(std::string_view(s.data(), s.size()), ctx);
  }
};

template <>
struct fmt::formatter<absl::Status> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(const absl::Status& s, Ctx& ctx) const {
    // Code and message only: payloads (structured error details, internal marks) are binary.
    const std::string text = s.ToString(absl::StatusToStringMode::kWithNoExtraData);
    return fmt::formatter<std::string_view>::format(std::string_view(text), ctx);
  }
};

#endif  // GCPSTREAM_UTIL_ABSL_FMT_H_
