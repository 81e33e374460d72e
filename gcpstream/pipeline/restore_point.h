#ifndef GCPSTREAM_PIPELINE_RESTORE_POINT_H_
#define GCPSTREAM_PIPELINE_RESTORE_POINT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gcpstream::pipeline {

// Where savepoints go by default: <checkpoint_dir>/savepoints.
std::string DefaultSavepointDir(const std::string& checkpoint_dir);

// What `run --restore` continues from: the most recently written of the latest checkpoint
// under `checkpoint_dir` and the savepoints under DefaultSavepointDir(checkpoint_dir) (a stop
// with savepoint is newer than the job's last checkpoint). NOT_FOUND when there is neither.
absl::StatusOr<std::string> FindRestorePoint(const std::string& checkpoint_dir);

// The outcome of ChooseRestorePoint().
struct RestoreChoice {
  // The checkpoint or savepoint directory to restore; empty when there is none at all.
  std::string path;
  // Whether `path` is a savepoint (a stop with savepoint) rather than a periodic checkpoint
  // (the run that wrote it may have died holding input).
  bool is_savepoint = false;
  // Newer ones that could not be read and were passed over (only with `fallback`), each with
  // why (DATA_LOSS naming the damaged file, FAILED_PRECONDITION for an unknown format).
  std::vector<std::pair<std::string, absl::Status>> skipped;
  // chk-<n> and savepoint folders without `_metadata` (being written when their job stopped,
  // or damaged): never chosen, and never passed over silently (run --restore warns).
  std::vector<std::string> incomplete;
};

// Picks what `run --restore` continues from, reading each candidate in full (checksums
// included) before choosing it, newest first:
// - the newest readable one is chosen when it is the newest of all;
// - when the newest cannot be read: with `fallback`, the next newest readable one is chosen
//   and the damaged ones are listed in `skipped`; without it, the read error is returned,
//   naming the file and saying how many older ones exist and how to fall back to them;
// - when nothing can be read (and there is something): the newest one's error.
// No candidate at all is not an error: `path` is empty (the job starts from the beginning).
absl::StatusOr<RestoreChoice> ChooseRestorePoint(const std::string& checkpoint_dir,
                                                 const std::string& savepoint_dir, bool fallback);

// Whether the previous run on `checkpoint_dir` ended cleanly, kept as a marker file
// (<checkpoint_dir>/.running, holding the run's pid): MarkRunStarted() writes it when a run
// starts and MarkRunEndedCleanly() removes it when the run ends with exit code 0 (finished,
// or stopped with a savepoint: its sources released what they held). A marker found at start
// means the previous run was killed, crashed or failed, and may have died holding input that
// comes back only later (Pub/Sub leases). The file system decides; errors are returned
// naming the path.
bool PreviousRunEndedCleanly(const std::string& checkpoint_dir);
absl::Status MarkRunStarted(const std::string& checkpoint_dir);
void MarkRunEndedCleanly(const std::string& checkpoint_dir);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_RESTORE_POINT_H_
