#include "gcpstream/bigquery/staging/avro_container.h"

#include <zlib.h>
#include <zstd.h>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"

namespace gcpstream::bigquery::staging {
namespace {

constexpr int kZstdLevel = 3;  // zstd's default level

void AppendAvroBytes(std::string_view bytes, std::string* out) {
  AppendAvroLong(static_cast<std::int64_t>(bytes.size()), out);
  out->append(bytes);
}

absl::StatusOr<std::string> Deflate(std::string_view in) {
  z_stream z{};
  // Raw deflate (RFC 1951), no zlib header: what Avro's "deflate" codec names.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError("deflate: initialization failed");
  }
  std::string out(deflateBound(&z, static_cast<uLong>(in.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return absl::InternalError(absl::StrCat("deflate failed: ", rc));
  return out;
}

absl::StatusOr<std::string> Zstandard(std::string_view in) {
  std::string out(ZSTD_compressBound(in.size()), '\0');
  const std::size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), kZstdLevel);
  if (ZSTD_isError(n)) {
    return absl::InternalError(absl::StrCat("zstandard: ", ZSTD_getErrorName(n)));
  }
  out.resize(n);
  return out;
}

}  // namespace

void AppendAvroLong(std::int64_t v, std::string* out) {
  std::uint64_t z = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
  while (z >= 0x80) {
    out->push_back(static_cast<char>((z & 0x7F) | 0x80));
    z >>= 7;
  }
  out->push_back(static_cast<char>(z));
}

std::string_view AvroCodecName(AvroCodec codec) {
  switch (codec) {
    case AvroCodec::kDeflate:
      return "deflate";
    case AvroCodec::kZstandard:
      return "zstandard";
    case AvroCodec::kNull:
      break;
  }
  return "null";
}

absl::StatusOr<AvroCodec> ParseAvroCodec(std::string_view name) {
  for (AvroCodec c : {AvroCodec::kNull, AvroCodec::kDeflate, AvroCodec::kZstandard}) {
    if (name == AvroCodecName(c)) return c;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown Avro codec \"", std::string(name.substr(0, 64)), "\": null, deflate or zstandard"));
}

AvroContainerWriter::AvroContainerWriter(std::string schema_json, AvroCodec codec,
                                         std::size_t block_bytes)
    : schema_json_(std::move(schema_json)),
      codec_(codec),
      block_bytes_(block_bytes == 0 ? 1 : block_bytes) {
  absl::BitGen gen;
  sync_.resize(16);
  for (char& c : sync_) c = static_cast<char>(absl::Uniform<unsigned>(gen, 0u, 256u));
}

void AvroContainerWriter::start(std::string* out) {
  out->append("Obj\x01", 4);
  AppendAvroLong(2, out);  // one map block of two entries, then the empty block
  AppendAvroBytes("avro.schema", out);
  AppendAvroBytes(schema_json_, out);
  AppendAvroBytes("avro.codec", out);
  AppendAvroBytes(AvroCodecName(codec_), out);
  AppendAvroLong(0, out);
  out->append(sync_);
}

absl::Status AvroContainerWriter::add(std::string_view datum, std::string* out) {
  if (datum.size() > kMaxBlockBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a row of ", datum.size(), " bytes as Avro exceeds BigQuery's 16 MB Avro block limit"));
  }
  if (!block_.empty() && block_.size() + datum.size() > kMaxBlockBytes) {
    if (absl::Status st = flush(out); !st.ok()) return st;
  }
  block_.append(datum);
  ++block_rows_;
  ++rows_;
  if (block_.size() >= block_bytes_) return flush(out);
  return absl::OkStatus();
}

absl::Status AvroContainerWriter::flush(std::string* out) {
  if (block_rows_ == 0) return absl::OkStatus();
  absl::StatusOr<std::string> compressed;
  switch (codec_) {
    case AvroCodec::kDeflate:
      compressed = Deflate(block_);
      break;
    case AvroCodec::kZstandard:
      compressed = Zstandard(block_);
      break;
    case AvroCodec::kNull:
      compressed = std::move(block_);
      break;
  }
  if (!compressed.ok()) return compressed.status();
  AppendAvroLong(block_rows_, out);
  AppendAvroBytes(*compressed, out);
  out->append(sync_);
  block_.clear();
  block_rows_ = 0;
  return absl::OkStatus();
}

}  // namespace gcpstream::bigquery::staging
