#include "gcpstream/pipeline/restore_point.h"

#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "gcpstream/runtime/checkpoint_storage.h"

namespace gcpstream::pipeline {
namespace fs = std::filesystem;

std::string DefaultSavepointDir(const std::string& checkpoint_dir) {
  return (fs::path(checkpoint_dir) / "savepoints").string();
}

absl::StatusOr<std::string> FindRestorePoint(const std::string& checkpoint_dir) {
  std::optional<std::string> best;
  fs::file_time_type best_time;
  auto consider = [&](const std::string& dir) {
    std::error_code ec;
    const auto t = fs::last_write_time(fs::path(dir) / "_metadata", ec);
    if (ec) return;
    if (!best || t > best_time) {
      best = dir;
      best_time = t;
    }
  };
  if (auto latest = runtime::CheckpointStorage::find_latest(checkpoint_dir); latest.ok()) {
    consider(*latest);
  }
  std::error_code ec;
  const fs::path savepoints(DefaultSavepointDir(checkpoint_dir));
  if (fs::is_directory(savepoints, ec)) {
    for (const auto& entry : fs::directory_iterator(savepoints, ec)) {
      if (entry.is_directory()) consider(entry.path().string());
    }
  }
  if (!best) {
    return absl::NotFoundError(
        fmt::format("no complete checkpoint or savepoint under {}", checkpoint_dir));
  }
  return *best;
}

}  // namespace gcpstream::pipeline
