#include "gcpstream/util/utf8.h"

#include <algorithm>
#include <cstdint>

namespace gcpstream::util {

std::optional<std::size_t> InvalidUtf8At(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      cp = c & 0x07;
    } else {
      return i;
    }
    for (std::size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return i;
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return i;
    }
    i += n + 1;
  }
  return std::nullopt;
}

std::string ToValidUtf8(std::string_view s, std::size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(std::min(s.size(), max_bytes));
  while (!s.empty()) {
    const std::size_t valid = InvalidUtf8At(s).value_or(s.size());
    // Copy the valid run up to the budget, never splitting a character.
    std::size_t take = std::min(valid, max_bytes - out.size());
    while (take < valid && take > 0 && (static_cast<unsigned char>(s[take]) & 0xC0) == 0x80) {
      --take;
    }
    out.append(s.substr(0, take));
    if (take < valid) return out;  // out of budget
    s.remove_prefix(valid);
    if (s.empty()) break;
    if (out.size() + 4 > max_bytes) return out;
    const auto c = static_cast<unsigned char>(s[0]);
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
    s.remove_prefix(1);
  }
  return out;
}

}  // namespace gcpstream::util
