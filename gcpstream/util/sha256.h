#ifndef GCPSTREAM_UTIL_SHA256_H_
#define GCPSTREAM_UTIL_SHA256_H_

#include <string>
#include <string_view>

namespace gcpstream::util {

// The SHA-256 digest of `bytes` (OpenSSL) as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view bytes);

}  // namespace gcpstream::util

#endif  // GCPSTREAM_UTIL_SHA256_H_
