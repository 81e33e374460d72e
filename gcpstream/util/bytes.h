#ifndef GCPSTREAM_UTIL_BYTES_H_
#define GCPSTREAM_UTIL_BYTES_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gcpstream::util {

// Little helpers for hand-written versioned serializers: fixed-width little-endian integers and
// length-prefixed strings. ByteReader reports truncation as DATA_LOSS.
class ByteWriter {
 public:
  void put_i64(std::int64_t v) { put_fixed(static_cast<std::uint64_t>(v)); }
  void put_u32(std::uint32_t v) {
    char b[4];
    for (int i = 0; i < 4; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    out_.append(b, 4);
  }
  void put_bool(bool v) { out_.push_back(v ? 1 : 0); }
  void put_string(std::string_view s) {
    put_u32(static_cast<std::uint32_t>(s.size()));
    out_.append(s.data(), s.size());
  }
  std::string take() { return std::move(out_); }

 private:
  void put_fixed(std::uint64_t v) {
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    out_.append(b, 8);
  }
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  absl::StatusOr<std::int64_t> i64() {
    if (in_.size() < 8) return truncated();
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) {
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[i])) << (8 * i);
    }
    in_.remove_prefix(8);
    return static_cast<std::int64_t>(v);
  }
  absl::StatusOr<std::uint32_t> u32() {
    if (in_.size() < 4) return truncated();
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      v |= static_cast<std::uint32_t>(static_cast<unsigned char>(in_[i])) << (8 * i);
    }
    in_.remove_prefix(4);
    return v;
  }
  absl::StatusOr<bool> boolean() {
    if (in_.empty()) return truncated();
    const bool v = in_[0] != 0;
    in_.remove_prefix(1);
    return v;
  }
  absl::StatusOr<std::string> string() {
    auto n = u32();
    if (!n.ok()) return n.status();
    if (in_.size() < *n) return truncated();
    std::string s(in_.substr(0, *n));
    in_.remove_prefix(*n);
    return s;
  }
  bool done() const { return in_.empty(); }

 private:
  static absl::Status truncated() { return absl::DataLossError("serialized state is truncated"); }
  std::string_view in_;
};

// The error a serializer returns for a version it cannot read.
absl::Status UnknownVersion(std::string_view what, int version, int supported);

}  // namespace gcpstream::util

#endif  // GCPSTREAM_UTIL_BYTES_H_
