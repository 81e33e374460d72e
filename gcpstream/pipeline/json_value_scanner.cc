#include "gcpstream/pipeline/json_value_scanner.h"

#include <fmt/format.h>

namespace gcpstream::pipeline {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

void JsonValueScanner::end_value(std::int64_t end) {
  values_.push_back(Range{begin_, end});
  in_value_ = false;
  scalar_ = false;
  expect_ = Expect::kSeparator;
}

absl::Status JsonValueScanner::feed(std::string_view bytes, std::int64_t offset) {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    const std::int64_t at = offset + static_cast<std::int64_t>(i);
    if (in_value_) {
      if (scalar_) {
        if (IsSpace(c) || c == ',' || c == ']') {
          end_value(at);
          // Re-examine the delimiter at depth 0 below.
        } else {
          continue;
        }
      } else if (in_string_) {
        if (escape_) {
          escape_ = false;
        } else if (c == '\\') {
          escape_ = true;
        } else if (c == '"') {
          in_string_ = false;
          if (depth_ == 0) end_value(at + 1);
        }
        continue;
      } else {
        if (c == '"') {
          in_string_ = true;
        } else if (c == '{' || c == '[') {
          ++depth_;
        } else if (c == '}' || c == ']') {
          if (--depth_ == 0) end_value(at + 1);
        }
        continue;
      }
    }
    // Between values.
    if (IsSpace(c)) continue;
    if (closed_) {
      return absl::InvalidArgumentError(
          fmt::format("unexpected '{}' at byte {} after the closing ']' of the array", c, at));
    }
    if (array_ && c == ',') {
      if (expect_ != Expect::kSeparator) {
        return absl::InvalidArgumentError(
            fmt::format("unexpected ',' at byte {}: an array element is missing before it", at));
      }
      expect_ = Expect::kValue;
      continue;
    }
    if (array_ && c == ']') {
      if (expect_ == Expect::kValue) {
        return absl::InvalidArgumentError(
            fmt::format("unexpected ']' at byte {}: a trailing ',' before it", at));
      }
      closed_ = true;
      continue;
    }
    if (array_ && expect_ == Expect::kSeparator && c != '}') {
      return absl::InvalidArgumentError(fmt::format(
          "unexpected '{}' at byte {}: a ',' is missing between array elements", c, at));
    }
    if (c == ',' || c == ']' || c == '}') {
      return absl::InvalidArgumentError(
          fmt::format("unexpected '{}' at byte {} between JSON values", c, at));
    }
    in_value_ = true;
    begin_ = at;
    depth_ = 0;
    if (c == '{' || c == '[') {
      depth_ = 1;
    } else if (c == '"') {
      in_string_ = true;
    } else {
      scalar_ = true;
    }
  }
  return absl::OkStatus();
}

absl::Status JsonValueScanner::finish(std::int64_t offset) {
  if (in_value_ && scalar_) end_value(offset);
  if (in_value_) {
    return absl::InvalidArgumentError(fmt::format(
        "the JSON value starting at byte {} is not complete at the end of the input", begin_));
  }
  return absl::OkStatus();
}

}  // namespace gcpstream::pipeline
