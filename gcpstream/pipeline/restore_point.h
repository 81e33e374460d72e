#ifndef GCPSTREAM_PIPELINE_RESTORE_POINT_H_
#define GCPSTREAM_PIPELINE_RESTORE_POINT_H_

#include <string>

#include "absl/status/statusor.h"

namespace gcpstream::pipeline {

// Where savepoints go by default: <checkpoint_dir>/savepoints.
std::string DefaultSavepointDir(const std::string& checkpoint_dir);

// What `run --restore` continues from: the most recently written of the latest checkpoint
// under `checkpoint_dir` and the savepoints under DefaultSavepointDir(checkpoint_dir) (a stop
// with savepoint is newer than the job's last checkpoint). NOT_FOUND when there is neither.
absl::StatusOr<std::string> FindRestorePoint(const std::string& checkpoint_dir);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_RESTORE_POINT_H_
