#ifndef GCPSTREAM_BIGQUERY_STAGING_AVRO_CONTAINER_H_
#define GCPSTREAM_BIGQUERY_STAGING_AVRO_CONTAINER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gcpstream::bigquery::staging {

// The block codec of a staging file. BigQuery's Avro loads read all three (Avro
// specification, "Required Codecs" / "Optional Codecs"; BigQuery "Loading Avro data":
// DEFLATE, Snappy and ZSTD compressed blocks).
enum class AvroCodec { kNull, kDeflate, kZstandard };

// "null", "deflate", "zstandard" (the names the file header carries).
std::string_view AvroCodecName(AvroCodec codec);
// The codec from its header name; INVALID_ARGUMENT for any other.
absl::StatusOr<AvroCodec> ParseAvroCodec(std::string_view name);

// Writes an Avro object container file (Avro 1.11 specification, "Object Container Files")
// as a stream of bytes: the header (magic, the schema JSON exactly as given, the codec, a
// random 16-byte sync marker), then blocks of datums, each compressed as a whole and closed
// by the sync marker. The caller hands over what is written and may send it off at once: the
// writer keeps only the open block, so memory is bounded by `block_bytes` however large the
// file grows.
//
// Written here rather than with Avro C's file writer because that writer re-serializes the
// schema it is given and drops every logicalType and sqlType attribute (measured with the
// Debian libavro 1.11.1), and BigQuery needs them to load TIMESTAMP, DATE, NUMERIC and JSON.
// The datums themselves are Avro C's (AvroRowEncoder). Not thread-safe.
class AvroContainerWriter {
 public:
  // `block_bytes` (default 1 MiB; at least 1): a block closes once its uncompressed datums
  // reach this size. BigQuery limits an Avro block to 16 MB, so a single datum above that is
  // refused by add().
  AvroContainerWriter(std::string schema_json, AvroCodec codec, std::size_t block_bytes = 1 << 20);

  // Appends the header to `out` (call once, first).
  void start(std::string* out);
  // Adds one datum; appends a closed block to `out` when the open one reaches block_bytes.
  // INVALID_ARGUMENT for a datum over 16,000,000 bytes; INTERNAL if compression fails.
  absl::Status add(std::string_view datum, std::string* out);
  // Closes the open block, if any, appending it to `out`.
  absl::Status flush(std::string* out);

  std::int64_t rows() const { return rows_; }
  // Uncompressed bytes in the open block.
  std::size_t pending_bytes() const { return block_.size(); }

  static constexpr std::size_t kMaxBlockBytes = 16'000'000;

 private:
  std::string schema_json_;
  AvroCodec codec_;
  std::size_t block_bytes_;
  std::string sync_;
  std::string block_;
  std::int64_t block_rows_ = 0;
  std::int64_t rows_ = 0;
};

// Appends Avro's zig-zag varint encoding of `v` (the binary encoding of int and long).
void AppendAvroLong(std::int64_t v, std::string* out);

}  // namespace gcpstream::bigquery::staging

#endif  // GCPSTREAM_BIGQUERY_STAGING_AVRO_CONTAINER_H_
