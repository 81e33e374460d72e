#include "gcpstream/bigtable/source/bigtable_scan_split.h"

#include "gcpstream/api/status_macros.h"
#include "gcpstream/util/bytes.h"

namespace gcpstream::bigtable {
namespace {

void PutSplit(util::ByteWriter& out, const BigtableScanSplit& split) {
  out.put_string(split.id);
  out.put_string(split.range.start);
  out.put_string(split.range.end);
}

absl::StatusOr<BigtableScanSplit> GetSplit(util::ByteReader& in) {
  BigtableScanSplit split;
  GCP_ASSIGN_OR_RETURN(split.id, in.string());
  GCP_ASSIGN_OR_RETURN(split.range.start, in.string());
  GCP_ASSIGN_OR_RETURN(split.range.end, in.string());
  if (split.id.empty()) return absl::DataLossError("BigtableScanSplit: corrupt state (no id)");
  return split;
}

absl::Status Trailing(std::string_view what) {
  return absl::DataLossError(std::string(what) + ": corrupt state (trailing bytes)");
}

}  // namespace

std::vector<BigtableScanSplit> PlanScanSplits(const std::vector<RowKeyRange>& ranges,
                                              std::vector<std::string> sample_keys) {
  std::vector<BigtableScanSplit> out;
  for (RowKeyRange& piece : CutRanges(ranges, std::move(sample_keys))) {
    out.push_back(BigtableScanSplit{"range-" + std::to_string(out.size()), std::move(piece)});
  }
  return out;
}

absl::StatusOr<std::string> BigtableScanSplitSerializer::serialize(
    const BigtableScanSplit& split) const {
  util::ByteWriter out;
  PutSplit(out, split);
  return out.take();
}

absl::StatusOr<BigtableScanSplit> BigtableScanSplitSerializer::deserialize(
    int version, std::string_view bytes) const {
  if (version != 1) return util::UnknownVersion("BigtableScanSplit", version, 1);
  util::ByteReader in(bytes);
  GCP_ASSIGN_OR_RETURN(BigtableScanSplit split, GetSplit(in));
  if (!in.done()) return Trailing("BigtableScanSplit");
  return split;
}

absl::StatusOr<std::string> BigtableScanEnumStateSerializer::serialize(
    const BigtableScanEnumState& state) const {
  util::ByteWriter out;
  out.put_bool(state.planned);
  out.put_i64(state.split_count);
  out.put_u32(static_cast<std::uint32_t>(state.unassigned.size()));
  for (const BigtableScanSplit& split : state.unassigned) PutSplit(out, split);
  out.put_u32(static_cast<std::uint32_t>(state.ranges.size()));
  for (const RowKeyRange& r : state.ranges) {
    out.put_string(r.start);
    out.put_string(r.end);
  }
  return out.take();
}

absl::StatusOr<BigtableScanEnumState> BigtableScanEnumStateSerializer::deserialize(
    int version, std::string_view bytes) const {
  if (version != 1 && version != 2) {
    return util::UnknownVersion("BigtableScanEnumState", version, 2);
  }
  util::ByteReader in(bytes);
  BigtableScanEnumState state;
  GCP_ASSIGN_OR_RETURN(state.planned, in.boolean());
  GCP_ASSIGN_OR_RETURN(state.split_count, in.i64());
  GCP_ASSIGN_OR_RETURN(std::uint32_t n, in.u32());
  if (state.split_count < 0 || n > state.split_count) {
    return absl::DataLossError("BigtableScanEnumState: corrupt state (split counts)");
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    GCP_ASSIGN_OR_RETURN(BigtableScanSplit split, GetSplit(in));
    state.unassigned.push_back(std::move(split));
  }
  if (version >= 2) {
    GCP_ASSIGN_OR_RETURN(std::uint32_t ranges, in.u32());
    for (std::uint32_t i = 0; i < ranges; ++i) {
      RowKeyRange r;
      GCP_ASSIGN_OR_RETURN(r.start, in.string());
      GCP_ASSIGN_OR_RETURN(r.end, in.string());
      state.ranges.push_back(std::move(r));
    }
  }
  if (!in.done()) return Trailing("BigtableScanEnumState");
  return state;
}

}  // namespace gcpstream::bigtable
