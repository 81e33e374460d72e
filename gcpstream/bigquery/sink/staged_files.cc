#include "gcpstream/bigquery/sink/staged_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/gcs/storage_client.h"
#include "gcpstream/util/bytes.h"
#include "gcpstream/util/sha256.h"

namespace gcpstream::bigquery {
namespace {

// A committable's URI count is bounded when read back, so a corrupt count cannot make the
// restore allocate without bound (a subtask stages far fewer files per checkpoint).
constexpr std::uint32_t kMaxUrisPerCommittable = 1'000'000;

bool IsGcsUri(const std::string& uri) { return gcs::ParseGcsUri(uri).ok(); }

// Why `f` cannot be a committable; OK when it can.
std::string Flaw(const StagedFiles& f) {
  if (!connector::BigQueryTableDestination::parse(f.table)) {
    return fmt::format("table '{}' is not projects/P/datasets/D/tables/T", f.table.substr(0, 200));
  }
  if (f.format.empty()) return "no source format";
  if (f.uris.empty()) return "no staged file";
  for (const auto& uri : f.uris) {
    if (!IsGcsUri(uri)) return fmt::format("'{}' is not a gs:// object URI", uri.substr(0, 200));
  }
  if (f.rows < 0 || f.bytes < 0) return fmt::format("{} rows, {} bytes", f.rows, f.bytes);
  if (f.checkpoint_id < -1) return fmt::format("checkpoint {}", f.checkpoint_id);
  return "";
}

// End of input (-1) loads after every checkpoint.
std::int64_t LoadOrder(std::int64_t checkpoint_id) {
  return checkpoint_id < 0 ? std::numeric_limits<std::int64_t>::max() : checkpoint_id;
}

}  // namespace

absl::StatusOr<std::string> StagedFilesSerializer::serialize(const StagedFiles& f) const {
  // Refused here, where the writer can say so, rather than at a restore that cannot.
  if (const std::string flaw = Flaw(f); !flaw.empty()) {
    return absl::InternalError("a FILE_LOADS committable is invalid: " + flaw);
  }
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
  if (const std::string flaw = Flaw(f); !flaw.empty()) {
    return absl::DataLossError("StagedFiles: corrupt state: " + flaw);
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
  // (load order, table, format, files): checkpoints in order, the end of input last. Each
  // committable (one writer's files of one table) is a load of its own, so the job ids stay the
  // same when a restore at another parallelism hands several writers' committables to one
  // committer.
  using Key = std::tuple<std::int64_t, std::string, std::string, std::vector<std::string>>;
  std::map<Key, PlannedLoad> loads;
  std::set<std::string> seen;
  StagedFilesSerializer serializer;
  for (const auto& c : committables) {
    if (const std::string flaw = Flaw(c); !flaw.empty()) {
      return absl::InvalidArgumentError("a FILE_LOADS committable is invalid: " + flaw);
    }
    // A committable delivered twice (a restore re-commits what it holds) counts once.
    GCP_ASSIGN_OR_RETURN(std::string identity, serializer.serialize(c));
    if (!seen.insert(std::move(identity)).second) continue;
    std::vector<std::string> files = c.uris;
    std::sort(files.begin(), files.end());
    files.erase(std::unique(files.begin(), files.end()), files.end());
    PlannedLoad& load = loads[{LoadOrder(c.checkpoint_id), c.table, c.format, std::move(files)}];
    load.table = c.table;
    load.format = c.format;
    load.checkpoint_id = c.checkpoint_id;
    // Saturating: a count, never a wrap-around.
    load.rows = c.rows > std::numeric_limits<std::int64_t>::max() - load.rows
                    ? std::numeric_limits<std::int64_t>::max()
                    : load.rows + c.rows;
    load.uris.insert(load.uris.end(), c.uris.begin(), c.uris.end());
  }
  std::vector<PlannedLoad> out;
  out.reserve(loads.size());
  for (auto& [key, load] : loads) {
    std::sort(load.uris.begin(), load.uris.end());
    load.uris.erase(std::unique(load.uris.begin(), load.uris.end()), load.uris.end());
    if (load.uris.size() > kMaxLoadSourceUris) {
      return absl::FailedPreconditionError(fmt::format(
          "{} files staged for {} by one writer in one checkpoint exceed a load job's {} source "
          "URIs; loading through temporary tables is not built: raise max_staging_file_bytes "
          "for new data (restored committables this large can only be dropped by starting "
          "without state)",
          load.uris.size(), load.table, kMaxLoadSourceUris));
    }
    load.job_id = LoadJobId(load.table, load.format, load.uris, load.checkpoint_id);
    out.push_back(std::move(load));
  }
  return out;
}

}  // namespace gcpstream::bigquery
