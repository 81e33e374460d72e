#ifndef GCPSTREAM_API_VALUE_CODEC_H_
#define GCPSTREAM_API_VALUE_CODEC_H_

#include <bit>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/statusor.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/util/bytes.h"

namespace gcpstream {

// How keyed state stores a key or value in a checkpoint. Built in for arithmetic types,
// std::string and std::pair of encodable types; specialize ValueCodec<T> (encode/decode) to make
// your own types checkpointable in keyed operators.
template <typename T>
struct ValueCodec;

template <typename T>
concept Encodable = requires(const T& v, util::ByteWriter& w, util::ByteReader& r) {
  ValueCodec<T>::encode(v, w);
  { ValueCodec<T>::decode(r) } -> std::same_as<absl::StatusOr<T>>;
};

template <typename T>
requires std::is_integral_v<T> || std::is_enum_v<T>
struct ValueCodec<T> {
  static void encode(const T& v, util::ByteWriter& w) { w.put_i64(static_cast<std::int64_t>(v)); }
  static absl::StatusOr<T> decode(util::ByteReader& r) {
    GCP_ASSIGN_OR_RETURN(std::int64_t v, r.i64());
    return static_cast<T>(v);
  }
};

template <>
struct ValueCodec<double> {
  static void encode(const double& v, util::ByteWriter& w) {
    w.put_i64(std::bit_cast<std::int64_t>(v));
  }
  static absl::StatusOr<double> decode(util::ByteReader& r) {
    GCP_ASSIGN_OR_RETURN(std::int64_t v, r.i64());
    return std::bit_cast<double>(v);
  }
};

template <>
struct ValueCodec<std::string> {
  static void encode(const std::string& v, util::ByteWriter& w) { w.put_string(v); }
  static absl::StatusOr<std::string> decode(util::ByteReader& r) { return r.string(); }
};

template <Encodable A, Encodable B>
struct ValueCodec<std::pair<A, B>> {
  static void encode(const std::pair<A, B>& v, util::ByteWriter& w) {
    ValueCodec<A>::encode(v.first, w);
    ValueCodec<B>::encode(v.second, w);
  }
  static absl::StatusOr<std::pair<A, B>> decode(util::ByteReader& r) {
    GCP_ASSIGN_OR_RETURN(A a, ValueCodec<A>::decode(r));
    GCP_ASSIGN_OR_RETURN(B b, ValueCodec<B>::decode(r));
    return std::pair<A, B>{std::move(a), std::move(b)};
  }
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_VALUE_CODEC_H_
