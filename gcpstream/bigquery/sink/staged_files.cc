#include "gcpstream/bigquery/sink/staged_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/util/bytes.h"
#include "gcpstream/util/sha256.h"

namespace gcpstream::bigquery {
namespace {

// A committable's URI count is bounded when read back, so a corrupt count cannot make the
// restore allocate without bound (a subtask stages far fewer files per checkpoint).
constexpr std::uint32_t kMaxUrisPerCommittable = 1'000'000;

bool IsGcsUri(const std::string& uri) { return uri.rfind("gs://", 0) == 0 && uri.size() > 5; }

}  // namespace

absl::StatusOr<std::string> StagedFilesSerializer::serialize(const StagedFiles& f) const {
  util::ByteWriter out;
  out.put_string(f.table);
  out.put_string(f.format);
  out.put_u32(static_cast<std::uint32_t>(f.uris.size()));
  for (const auto& uri : f.uris) out.put_string(uri);
  out.put_i64(f.rows);
  out.put_i64(f.bytes);
  out.put_i64(f.checkpoint_id);
  return out.take();
}

absl::StatusOr<StagedFiles> StagedFilesSerializer::deserialize(int version,
                                                               std::string_view bytes) const {
  if (version != 1) return util::UnknownVersion("StagedFiles", version, 1);
  util::ByteReader in(bytes);
  StagedFiles f;
  GCP_ASSIGN_OR_RETURN(f.table, in.string());
  GCP_ASSIGN_OR_RETURN(f.format, in.string());
  GCP_ASSIGN_OR_RETURN(std::uint32_t count, in.u32());
  if (count > kMaxUrisPerCommittable) {
    return absl::DataLossError(fmt::format("StagedFiles: corrupt state ({} files)", count));
  }
  for (std::uint32_t i = 0; i < count; ++i) {
    GCP_ASSIGN_OR_RETURN(std::string uri, in.string());
    f.uris.push_back(std::move(uri));
  }
  GCP_ASSIGN_OR_RETURN(f.rows, in.i64());
  GCP_ASSIGN_OR_RETURN(f.bytes, in.i64());
  GCP_ASSIGN_OR_RETURN(f.checkpoint_id, in.i64());
  if (!in.done()) return absl::DataLossError("StagedFiles: trailing bytes");
  const bool uris_ok = std::all_of(f.uris.begin(), f.uris.end(), IsGcsUri);
  if (f.table.rfind("projects/", 0) != 0 || f.format.empty() || f.uris.empty() || !uris_ok ||
      f.rows < 0 || f.bytes < 0 || f.checkpoint_id < -1) {
    return absl::DataLossError(fmt::format(
        "StagedFiles: corrupt state (table '{}', format '{}', {} files, {} rows, checkpoint {})",
        f.table.substr(0, 200), f.format.substr(0, 20), f.uris.size(), f.rows, f.checkpoint_id));
  }
  return f;
}

std::string LoadJobId(const std::string& table, const std::string& format,
                      const std::vector<std::string>& sorted_uris, std::int64_t checkpoint_id) {
  // Newlines cannot occur in a table name, a format or a gs:// URI's bucket, and every field is
  // length-prefixed, so two different inputs never hash the same text.
  std::string text = fmt::format("{}:{}\n{}:{}\n", table.size(), table, format.size(), format);
  for (const auto& uri : sorted_uris) text += fmt::format("{}:{}\n", uri.size(), uri);
  std::string id = "gcpstream_load_" + util::Sha256Hex(text).substr(0, 48);
  if (checkpoint_id >= 0) id += fmt::format("-c{}", checkpoint_id);
  return id;
}

absl::StatusOr<std::vector<PlannedLoad>> PlanLoads(const std::vector<StagedFiles>& committables) {
  using Key = std::tuple<std::int64_t, std::string, std::string>;  // checkpoint, table, format
  std::map<Key, PlannedLoad> loads;
  std::vector<const StagedFiles*> seen;
  for (const auto& c : committables) {
    // A committable delivered twice (a restore re-commits what it holds) counts once.
    if (std::any_of(seen.begin(), seen.end(), [&](const StagedFiles* s) { return *s == c; })) {
      continue;
    }
    seen.push_back(&c);
    if (c.table.empty() || c.uris.empty()) {
      return absl::InvalidArgumentError(
          "a FILE_LOADS committable names no table or no staged file");
    }
    PlannedLoad& load = loads[{c.checkpoint_id, c.table, c.format}];
    load.table = c.table;
    load.format = c.format;
    load.checkpoint_id = c.checkpoint_id;
    load.rows += c.rows;
    for (const auto& uri : c.uris) {
      if (!IsGcsUri(uri)) {
        return absl::InvalidArgumentError(
            fmt::format("staged file '{}' is not a gs:// URI", uri.substr(0, 300)));
      }
      load.uris.push_back(uri);
    }
  }
  std::vector<PlannedLoad> out;
  out.reserve(loads.size());
  for (auto& [key, load] : loads) {
    std::sort(load.uris.begin(), load.uris.end());
    load.uris.erase(std::unique(load.uris.begin(), load.uris.end()), load.uris.end());
    if (load.uris.size() > kMaxLoadSourceUris) {
      return absl::FailedPreconditionError(fmt::format(
          "{} files staged for {} in one commit exceed a load job's {} source URIs; loading "
          "through temporary tables is not built: raise maxStagingFileBytes or checkpoint more "
          "often",
          load.uris.size(), load.table, kMaxLoadSourceUris));
    }
    load.job_id = LoadJobId(load.table, load.format, load.uris, load.checkpoint_id);
    out.push_back(std::move(load));
  }
  return out;
}

}  // namespace gcpstream::bigquery
