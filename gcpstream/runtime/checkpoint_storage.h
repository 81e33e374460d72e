#ifndef GCPSTREAM_RUNTIME_CHECKPOINT_STORAGE_H_
#define GCPSTREAM_RUNTIME_CHECKPOINT_STORAGE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/runtime/completed_checkpoint.h"

namespace gcpstream::runtime {

// Durable checkpoints on a local (or mounted) file system.
//
// Layout: <base>/<job-id>/chk-<n>/ (savepoints: wherever the caller asks) holding one state
// file per operator and subtask plus `_metadata`. Every file is written to a temporary name,
// fsync'ed, renamed into place, and the directory fsync'ed; `_metadata` is written last, so a
// checkpoint is complete exactly when `_metadata` exists. A crash at any moment leaves either a
// complete checkpoint or a directory without `_metadata`, which readers ignore.
class CheckpointStorage {
 public:
  // Current format version of the files written (see gcpstream/runtime/proto/checkpoint.proto).
  static constexpr int kFormatVersion = 1;

  // <base>/<job-id>/chk-<n>
  static std::string checkpoint_dir(const std::string& base, const std::string& job_id,
                                    std::int64_t id);

  // Writes `checkpoint` into `dir` (created if needed). Errors: INTERNAL/UNAVAILABLE-style
  // errors from the file system, naming the file.
  static absl::Status write(const std::string& dir, const CompletedCheckpoint& checkpoint);

  // Reads a complete checkpoint directory. Errors: NOT_FOUND without `_metadata`;
  // FAILED_PRECONDITION for a format version this build does not know; DATA_LOSS for a
  // corrupt or missing state file.
  static absl::StatusOr<CompletedCheckpoint> read(const std::string& dir);

  // The latest complete checkpoint under `path`, which may be a checkpoint directory itself, a
  // job directory (holding chk-<n>), or a base directory (holding job directories): the first
  // of list_restore_points(path, "") (ordered by what each `_metadata` records). NOT_FOUND
  // when there is none.
  static absl::StatusOr<std::string> find_latest(const std::string& path);

  // What a restart continues from: the first of list_restore_points() (a stop with savepoint
  // is newer than the job's last checkpoint). Only complete ones count (those with
  // `_metadata`). NOT_FOUND when there is neither.
  static absl::StatusOr<std::string> find_restore_point(const std::string& checkpoint_dir,
                                                        const std::string& savepoint_dir);

  // Every complete checkpoint a restart could continue from, newest first by what each one's
  // `_metadata` records (the time it was taken, then its id; ids grow across a chain of
  // restores), never by file times: the chk-<n> under `checkpoint_dir` (itself a checkpoint, a
  // job directory or a base directory of job directories) and the savepoints directly under
  // `savepoint_dir`. A `_metadata` that does not parse sorts first (read() then reports it).
  // find_restore_point() is the first of these. Empty when there is none (a missing directory
  // is none).
  static std::vector<std::string> list_restore_points(const std::string& checkpoint_dir,
                                                      const std::string& savepoint_dir);

  // The chk-<n> under `checkpoint_dir` (same nesting as above) that have no `_metadata`: a
  // checkpoint being written when its job stopped, or one whose `_metadata` was removed.
  static std::vector<std::string> list_incomplete(const std::string& checkpoint_dir);

  // Removes a checkpoint directory, `_metadata` first so a partial removal is never mistaken
  // for a complete checkpoint.
  static absl::Status remove(const std::string& dir);
  // Retention over a job's whole checkpoint folder (<base>/<job-id>), not only the checkpoints
  // this attempt wrote: after checkpoint `completed_id` completed, keeps the `retained` newest
  // complete chk-<n> (n <= completed_id) and removes the older ones, and removes incomplete
  // chk-<n> with n < completed_id (left by attempts that died or aborted them). A chk-<n> above
  // completed_id is never touched. Returns what it removed.
  static absl::StatusOr<std::vector<std::string>> apply_retention(const std::string& job_dir,
                                                                  std::int64_t completed_id,
                                                                  int retained);
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_CHECKPOINT_STORAGE_H_
