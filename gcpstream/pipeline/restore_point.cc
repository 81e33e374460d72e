#include "gcpstream/pipeline/restore_point.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gcpstream/runtime/checkpoint_storage.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::pipeline {
namespace fs = std::filesystem;
using runtime::CheckpointStorage;

std::string DefaultSavepointDir(const std::string& checkpoint_dir) {
  return (fs::path(checkpoint_dir) / "savepoints").string();
}

absl::StatusOr<std::string> FindRestorePoint(const std::string& checkpoint_dir) {
  return CheckpointStorage::find_restore_point(checkpoint_dir, DefaultSavepointDir(checkpoint_dir));
}

absl::StatusOr<RestoreChoice> ChooseRestorePoint(const std::string& checkpoint_dir,
                                                 const std::string& savepoint_dir, bool fallback) {
  RestoreChoice choice;
  choice.incomplete = CheckpointStorage::list_incomplete(checkpoint_dir);
  // Savepoint folders without _metadata too (being written when their job stopped, or damaged).
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(savepoint_dir, ec)) {
    std::error_code inner;
    if (entry.is_directory(inner) &&
        !fs::exists(fs::symlink_status(entry.path() / "_metadata", inner))) {
      choice.incomplete.push_back(entry.path().string());
    }
  }
  const std::vector<std::string> points =
      CheckpointStorage::list_restore_points(checkpoint_dir, savepoint_dir);
  for (std::size_t i = 0; i < points.size(); ++i) {
    auto read = CheckpointStorage::read(points[i]);
    if (read.ok()) {
      choice.path = points[i];
      choice.is_savepoint = read->is_savepoint;
      return choice;
    }
    if (!fallback) {
      const std::size_t older = points.size() - i - 1;
      if (older == 0) return read.status();
      return absl::Status(
          read.status().code(),
          fmt::format("{}. {} older complete checkpoint{} or savepoint{} exist{} (the newest: "
                      "{}); to continue from the newest of them that reads correctly, run again "
                      "with --restore-fallback",
                      read.status().message(), older, older == 1 ? "" : "s", older == 1 ? "" : "s",
                      older == 1 ? "s" : "", points[i + 1]));
    }
    choice.skipped.emplace_back(points[i], read.status());
  }
  if (!choice.skipped.empty()) {
    const auto& [newest, why] = choice.skipped.front();
    return absl::Status(why.code(),
                        fmt::format("none of the {} checkpoints and savepoints can be read; the "
                                    "newest, {}: {}",
                                    choice.skipped.size(), newest, why.message()));
  }
  return choice;
}

namespace {

fs::path RunMarker(const std::string& checkpoint_dir) {
  return fs::path(checkpoint_dir) / ".running";
}

}  // namespace

bool PreviousRunEndedCleanly(const std::string& checkpoint_dir) {
  std::error_code ec;
  return !fs::exists(RunMarker(checkpoint_dir), ec);
}

absl::Status MarkRunStarted(const std::string& checkpoint_dir) {
  std::error_code ec;
  fs::create_directories(checkpoint_dir, ec);
  std::ofstream out(RunMarker(checkpoint_dir), std::ios::trunc);
  out << getpid() << "\n";
  out.close();
  if (!out) {
    return absl::InternalError(fmt::format("cannot write {}", RunMarker(checkpoint_dir).string()));
  }
  return absl::OkStatus();
}

void MarkRunEndedCleanly(const std::string& checkpoint_dir) {
  std::error_code ec;
  fs::remove(RunMarker(checkpoint_dir), ec);
}

}  // namespace gcpstream::pipeline
