#ifndef GCPSTREAM_PIPELINE_JSON_VALUE_SCANNER_H_
#define GCPSTREAM_PIPELINE_JSON_VALUE_SCANNER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace gcpstream::pipeline {

// Finds where top-level JSON values begin and end in a stream of bytes without parsing them:
// it tracks only strings, escapes and bracket depth. Used to plan byte-range splits of a file
// and to cut a split's bytes into records.
//
// In JSON-lines mode values are separated by whitespace. In array mode the scanner is fed the
// bytes *inside* the outer '[' (the caller skips it): values are separated by exactly one comma
// (an empty element ",,", a comma right after '[' or before ']', and two values with no comma
// between them are errors naming the offset), and a ']' at depth 0 ends the array (closed()
// turns true; only whitespace may follow). A comma may end the input (a split ends just
// before the next split's first value).
//
// Feed bytes in order with their absolute offsets; completed values are appended to
// values() as [begin, end) offsets. Not thread-safe.
class JsonValueScanner {
 public:
  struct Range {
    std::int64_t begin = 0;
    std::int64_t end = 0;
  };
  explicit JsonValueScanner(bool array_mode) : array_(array_mode) {}

  // INVALID_ARGUMENT naming the offset for bytes that cannot separate values (a stray ']' or
  // ',' in JSON-lines mode, anything after the array closed).
  absl::Status feed(std::string_view bytes, std::int64_t offset);
  // Call at end of input: a value still open is an error (truncated file), as is an array that
  // never closed.
  absl::Status finish(std::int64_t offset);

  std::vector<Range>& values() { return values_; }
  bool closed() const { return closed_; }
  bool in_value() const { return in_value_; }

 private:
  void end_value(std::int64_t end);

  // Array mode, between values: what may come next.
  enum class Expect { kValueOrClose, kValue, kSeparator };

  bool array_;
  Expect expect_ = Expect::kValueOrClose;
  bool closed_ = false;
  bool in_value_ = false;
  bool scalar_ = false;  // a top-level number/true/false/null
  bool in_string_ = false;
  bool escape_ = false;
  int depth_ = 0;
  std::int64_t begin_ = 0;
  std::vector<Range> values_;
};

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_JSON_VALUE_SCANNER_H_
