#include "gcpstream/pipeline/restore_point.h"

#include <filesystem>

#include "gcpstream/runtime/checkpoint_storage.h"

namespace gcpstream::pipeline {
namespace fs = std::filesystem;

std::string DefaultSavepointDir(const std::string& checkpoint_dir) {
  return (fs::path(checkpoint_dir) / "savepoints").string();
}

absl::StatusOr<std::string> FindRestorePoint(const std::string& checkpoint_dir) {
  return runtime::CheckpointStorage::find_restore_point(checkpoint_dir,
                                                        DefaultSavepointDir(checkpoint_dir));
}

}  // namespace gcpstream::pipeline
