#include "gcpstream/bigquery/source/read_stream_split.h"

#include "gcpstream/api/status_macros.h"
#include "gcpstream/util/bytes.h"

namespace gcpstream::bigquery {
namespace {

absl::Status Corrupt(std::string_view what, std::string_view why) {
  return absl::DataLossError(std::string(what) + ": corrupt state (" + std::string(why) + ")");
}

void PutSplit(util::ByteWriter& out, const ReadStreamSplit& split) {
  out.put_string(split.stream);
  out.put_i64(split.offset);
  out.put_string(split.avro_schema);
  out.put_i64(split.session_expire_micros);
}

absl::StatusOr<ReadStreamSplit> GetSplit(util::ByteReader& in) {
  ReadStreamSplit split;
  GCP_ASSIGN_OR_RETURN(split.stream, in.string());
  GCP_ASSIGN_OR_RETURN(split.offset, in.i64());
  GCP_ASSIGN_OR_RETURN(split.avro_schema, in.string());
  GCP_ASSIGN_OR_RETURN(split.session_expire_micros, in.i64());
  if (split.stream.empty()) return Corrupt("ReadStreamSplit", "no stream name");
  if (split.offset < 0) return Corrupt("ReadStreamSplit", "a negative offset");
  return split;
}

}  // namespace

absl::StatusOr<std::string> ReadStreamSplitSerializer::serialize(
    const ReadStreamSplit& split) const {
  util::ByteWriter out;
  PutSplit(out, split);
  return out.take();
}

absl::StatusOr<ReadStreamSplit> ReadStreamSplitSerializer::deserialize(
    int version, std::string_view bytes) const {
  if (version != 1) return util::UnknownVersion("ReadStreamSplit", version, 1);
  util::ByteReader in(bytes);
  GCP_ASSIGN_OR_RETURN(ReadStreamSplit split, GetSplit(in));
  if (!in.done()) return Corrupt("ReadStreamSplit", "trailing bytes");
  return split;
}

absl::StatusOr<std::string> BigQueryReadEnumStateSerializer::serialize(
    const BigQueryReadEnumState& state) const {
  util::ByteWriter out;
  out.put_string(state.session);
  out.put_i64(state.stream_count);
  out.put_string(state.avro_schema);
  out.put_i64(state.session_expire_micros);
  out.put_u32(static_cast<std::uint32_t>(state.unassigned.size()));
  for (const ReadStreamSplit& split : state.unassigned) {
    out.put_string(split.stream);
    out.put_i64(split.offset);
  }
  out.put_string(state.query_job);
  out.put_string(state.read_table);
  out.put_string(state.read_options);
  return out.take();
}

absl::StatusOr<BigQueryReadEnumState> BigQueryReadEnumStateSerializer::deserialize(
    int version, std::string_view bytes) const {
  constexpr char kWhat[] = "BigQueryReadEnumState";
  if (version != 1) return util::UnknownVersion(kWhat, version, 1);
  util::ByteReader in(bytes);
  BigQueryReadEnumState state;
  GCP_ASSIGN_OR_RETURN(state.session, in.string());
  GCP_ASSIGN_OR_RETURN(state.stream_count, in.i64());
  GCP_ASSIGN_OR_RETURN(state.avro_schema, in.string());
  GCP_ASSIGN_OR_RETURN(state.session_expire_micros, in.i64());
  GCP_ASSIGN_OR_RETURN(std::uint32_t n, in.u32());
  if (state.stream_count < 0 || n > state.stream_count) return Corrupt(kWhat, "stream counts");
  if (state.session.empty() && n > 0) return Corrupt(kWhat, "streams without a session");
  for (std::uint32_t i = 0; i < n; ++i) {
    ReadStreamSplit split;
    GCP_ASSIGN_OR_RETURN(split.stream, in.string());
    GCP_ASSIGN_OR_RETURN(split.offset, in.i64());
    if (split.stream.empty()) return Corrupt(kWhat, "a stream without a name");
    if (split.offset < 0) return Corrupt(kWhat, "a negative offset");
    split.avro_schema = state.avro_schema;
    split.session_expire_micros = state.session_expire_micros;
    state.unassigned.push_back(std::move(split));
  }
  GCP_ASSIGN_OR_RETURN(state.query_job, in.string());
  GCP_ASSIGN_OR_RETURN(state.read_table, in.string());
  GCP_ASSIGN_OR_RETURN(state.read_options, in.string());
  if (!in.done()) return Corrupt(kWhat, "trailing bytes");
  return state;
}

}  // namespace gcpstream::bigquery
