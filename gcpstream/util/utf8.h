#ifndef GCPSTREAM_UTIL_UTF8_H_
#define GCPSTREAM_UTIL_UTF8_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gcpstream::util {

// The offset of the first byte of `s` that is not part of well-formed UTF-8 (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF); nullopt when all of it is.
//
// Protobuf `string` fields must hold UTF-8: a request with anything else cannot be parsed by
// the service, so clients check before sending rather than wait for a rejection.
std::optional<std::size_t> InvalidUtf8At(std::string_view s);

// `s` made valid UTF-8 for a protobuf string field: each byte that is not part of well-formed
// UTF-8 becomes the text "\xNN", and the result is cut at a character boundary to at most
// `max_bytes` bytes (so a cut never splits a character).
std::string ToValidUtf8(std::string_view s, std::size_t max_bytes);

}  // namespace gcpstream::util

#endif  // GCPSTREAM_UTIL_UTF8_H_
