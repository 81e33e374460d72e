#ifndef GCPSTREAM_BIGQUERY_SINK_STAGED_FILES_H_
#define GCPSTREAM_BIGQUERY_SINK_STAGED_FILES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/api/versioned_serializer.h"
#include "gcpstream/connector/destinations.h"

// The FILE_LOADS write method's committable and the load plan built from committables
// (LoadJobCommitter runs the plan). The staging writer that produces them is not built yet
// (docs/bigquery.md, "What does not exist yet").
namespace gcpstream::bigquery {

// One load job references at most this many source URIs (BigQuery load-job limits).
inline constexpr std::size_t kMaxLoadSourceUris = 10000;

// The files one writer subtask staged for one destination table before a checkpoint barrier
// (or, in a bounded job, before the end of input): what the committer loads.
struct StagedFiles {
  std::string table;              // "projects/P/datasets/D/tables/T"
  std::string format = "AVRO";    // the load job's sourceFormat
  std::vector<std::string> uris;  // "gs://BUCKET/OBJECT", each staged once
  std::int64_t rows = 0;
  std::int64_t bytes = 0;
  // The checkpoint the files belong to; -1 for the end of a bounded input.
  std::int64_t checkpoint_id = -1;

  friend bool operator==(const StagedFiles&, const StagedFiles&) = default;
};

// Version 1: table, format, uris, rows, bytes, checkpoint id. serialize() refuses (INTERNAL) a
// committable a restore could not take back: a table that is not projects/P/datasets/D/tables/T,
// no format, no file, a URI that is not a gs:// object, negative counts, a checkpoint below -1.
// A restore refuses bytes that are not version 1 or describe such a committable (DATA_LOSS
// naming what is wrong).
class StagedFilesSerializer final : public VersionedSerializer<StagedFiles> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const StagedFiles& files) const override;
  absl::StatusOr<StagedFiles> deserialize(int version, std::string_view bytes) const override;
};

// One load job: one committable's files (one writer, one checkpoint, one table and format).
struct PlannedLoad {
  std::string table;
  std::string format;
  std::int64_t checkpoint_id = -1;
  std::vector<std::string> uris;  // sorted, each once
  std::int64_t rows = 0;
  std::string job_id;  // LoadJobId of the above
};

// The id of a load job: "gcpstream_load_" + the first 48 hex digits of SHA-256 over the table,
// the format and the sorted URI list, + "-c<checkpoint>" when it belongs to a checkpoint.
// Deterministic: a retry of the same load (same files, in any order) gets the same id, so it
// re-attaches to the job an earlier attempt created instead of loading twice; two distinct
// loads (another file, table, format or checkpoint) get distinct ids, so one is never mistaken
// for the other. Staged file names are unique per run, subtask, attempt and file, so equal file
// lists mean the same data. A valid BigQuery job id (letters, digits, '_' and '-', at most
// 1,024 characters).
std::string LoadJobId(const std::string& table, const std::string& format,
                      const std::vector<std::string>& sorted_uris, std::int64_t checkpoint_id);

// Turns committables into load jobs, in checkpoint order with the end of input last: one per
// committable (one writer's files of one table and format in one checkpoint), its URIs sorted
// and deduplicated; a committable delivered twice (a restore re-commits what it holds) counted
// once. Committables are never merged, so a restore that hands several writers' committables to
// one committer (another parallelism) plans the loads, and job ids, the writers' committers
// planned. INVALID_ARGUMENT for a committable serialize() would refuse; FAILED_PRECONDITION when
// one job would exceed kMaxLoadSourceUris (temporary tables and copy jobs are not built).
absl::StatusOr<std::vector<PlannedLoad>> PlanLoads(const std::vector<StagedFiles>& committables);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_STAGED_FILES_H_
