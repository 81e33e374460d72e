#include "gcpstream/runtime/checkpoint_storage.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/runtime/proto/checkpoint.pb.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::runtime {
namespace {

namespace fs = std::filesystem;
constexpr char kMetadata[] = "_metadata";

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

absl::Status FsyncPath(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return Errno("cannot open", path);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Errno("cannot fsync", path);
  return absl::OkStatus();
}

// temp file -> fsync -> rename; the caller fsyncs the directory (once for many files).
absl::Status WriteFile(const std::string& dir, const std::string& name, const std::string& bytes) {
  const std::string final_path = dir + "/" + name;
  const std::string temp_path = final_path + ".tmp";
  const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot create", temp_path);
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return Errno("cannot write", temp_path);
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    return Errno("cannot fsync", temp_path);
  }
  ::close(fd);
  if (::rename(temp_path.c_str(), final_path.c_str()) != 0)
    return Errno("cannot rename", temp_path);
  return absl::OkStatus();
}

absl::Status SyncDirectory(const std::string& dir) {
  return FsyncPath(dir, O_RDONLY | O_DIRECTORY);
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("cannot read {}", path));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string SafeName(const std::string& uid) {
  std::string out;
  for (char c : uid) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    out.push_back(ok ? c : '_');
  }
  return out;
}

proto::CheckpointingMode ToProto(CheckpointingMode mode) {
  return mode == CheckpointingMode::kExactlyOnce ? proto::EXACTLY_ONCE : proto::AT_LEAST_ONCE;
}

bool HasMetadata(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kMetadata, ec);
}

// chk-<n> -> n, or -1.
std::int64_t CheckpointNumber(const fs::path& dir) {
  const std::string name = dir.filename().string();
  if (name.rfind("chk-", 0) != 0) return -1;
  try {
    return std::stoll(name.substr(4));
  } catch (...) {
    return -1;
  }
}

// The highest complete chk-<n> directly under `job_dir`.
std::optional<fs::path> LatestInJobDir(const fs::path& job_dir) {
  std::optional<fs::path> best;
  std::int64_t best_n = -1;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(job_dir, ec)) {
    if (!entry.is_directory()) continue;
    const std::int64_t n = CheckpointNumber(entry.path());
    if (n > best_n && HasMetadata(entry.path())) {
      best_n = n;
      best = entry.path();
    }
  }
  return best;
}

}  // namespace

std::string CheckpointStorage::checkpoint_dir(const std::string& base, const std::string& job_id,
                                              std::int64_t id) {
  return fmt::format("{}/{}/chk-{}", base, job_id, id);
}

absl::Status CheckpointStorage::write(const std::string& dir, const CompletedCheckpoint& cp) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError(fmt::format("cannot create {}: {}", dir, ec.message()));
  // The new directory's own entry must survive a power loss too.
  GCP_RETURN_IF_ERROR(SyncDirectory(fs::path(dir).parent_path().string()));
  proto::CheckpointMetadata metadata;
  metadata.set_format_version(kFormatVersion);
  metadata.set_checkpoint_id(cp.id);
  metadata.set_job_id(cp.job_id);
  metadata.set_job_name(cp.job_name);
  metadata.set_timestamp_ms(cp.timestamp_ms);
  metadata.set_is_savepoint(cp.is_savepoint);
  metadata.set_mode(ToProto(cp.mode));
  for (const auto& [uid, op] : cp.operators) {
    auto* entry = metadata.add_operators();
    entry->set_uid(uid);
    entry->set_parallelism(op.parallelism);
    for (const auto& [subtask, lists] : op.subtasks) {
      proto::OperatorSubtaskState state;
      state.set_format_version(kFormatVersion);
      state.set_operator_uid(uid);
      state.set_subtask_index(subtask);
      for (const auto& [name, elements] : lists) {
        auto* list = state.add_lists();
        list->set_name(name);
        for (const auto& e : elements) {
          auto* element = list->add_elements();
          element->set_version(e.version);
          element->set_bytes(e.bytes);
        }
      }
      const std::string file = fmt::format(
          "op-{}-{}.state", SafeName(uid),
          subtask == kCoordinatorSubtask ? std::string("coordinator") : std::to_string(subtask));
      std::string bytes;
      if (!state.SerializeToString(&bytes)) {
        return absl::InternalError(fmt::format("cannot serialize state of {}", uid));
      }
      GCP_RETURN_IF_ERROR(WriteFile(dir, file, bytes));
      auto* ref = entry->add_files();
      ref->set_subtask_index(subtask);
      ref->set_file_name(file);
      ref->set_size_bytes(bytes.size());
    }
  }
  std::string bytes;
  if (!metadata.SerializeToString(&bytes)) {
    return absl::InternalError("cannot serialize checkpoint metadata");
  }
  // Every state file is durable (fsync'ed, and its name too) before _metadata can exist.
  GCP_RETURN_IF_ERROR(SyncDirectory(dir));
  GCP_RETURN_IF_ERROR(WriteFile(dir, kMetadata, bytes));
  return SyncDirectory(dir);
}

absl::StatusOr<CompletedCheckpoint> CheckpointStorage::read(const std::string& dir) {
  if (!HasMetadata(dir)) {
    return absl::NotFoundError(
        fmt::format("{} is not a complete checkpoint (it has no {} file)", dir, kMetadata));
  }
  GCP_ASSIGN_OR_RETURN(std::string bytes, ReadFile(dir + "/" + kMetadata));
  proto::CheckpointMetadata metadata;
  if (!metadata.ParseFromString(bytes)) {
    return absl::DataLossError(fmt::format("{}/{} is corrupt", dir, kMetadata));
  }
  if (metadata.format_version() != kFormatVersion) {
    return absl::FailedPreconditionError(
        fmt::format("{} was written in checkpoint format version {}; this build reads version {}",
                    dir, metadata.format_version(), kFormatVersion));
  }
  CompletedCheckpoint cp;
  cp.id = metadata.checkpoint_id();
  cp.job_id = metadata.job_id();
  cp.job_name = metadata.job_name();
  cp.timestamp_ms = metadata.timestamp_ms();
  cp.is_savepoint = metadata.is_savepoint();
  cp.mode = metadata.mode() == proto::AT_LEAST_ONCE ? CheckpointingMode::kAtLeastOnce
                                                    : CheckpointingMode::kExactlyOnce;
  cp.path = dir;
  for (const auto& op : metadata.operators()) {
    auto& state = cp.operators[op.uid()];
    state.parallelism = op.parallelism();
    for (const auto& file : op.files()) {
      const std::string path = dir + "/" + file.file_name();
      auto content = ReadFile(path);
      if (!content.ok()) {
        return absl::DataLossError(
            fmt::format("checkpoint {} lacks state file {}", dir, file.file_name()));
      }
      proto::OperatorSubtaskState subtask;
      if (content->size() != file.size_bytes() || !subtask.ParseFromString(*content)) {
        return absl::DataLossError(fmt::format("state file {} is corrupt", path));
      }
      if (subtask.format_version() != kFormatVersion) {
        return absl::FailedPreconditionError(
            fmt::format("{} was written in state format version {}; this build reads version {}",
                        path, subtask.format_version(), kFormatVersion));
      }
      auto& lists = state.subtasks[subtask.subtask_index()];
      for (const auto& list : subtask.lists()) {
        auto& elements = lists[list.name()];
        for (const auto& e : list.elements()) elements.push_back({e.version(), e.bytes()});
      }
    }
  }
  return cp;
}

absl::StatusOr<std::string> CheckpointStorage::find_latest(const std::string& path) {
  const fs::path root(path);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return absl::NotFoundError(fmt::format("{} is not a directory", path));
  }
  if (HasMetadata(root)) return root.string();
  if (auto best = LatestInJobDir(root)) return best->string();
  std::optional<fs::path> best;
  fs::file_time_type best_time;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory()) continue;
    auto candidate = LatestInJobDir(entry.path());
    if (!candidate) continue;
    const auto time = fs::last_write_time(*candidate / kMetadata, ec);
    if (!best || time > best_time) {
      best = candidate;
      best_time = time;
    }
  }
  if (best) return best->string();
  return absl::NotFoundError(fmt::format("no complete checkpoint under {}", path));
}

absl::Status CheckpointStorage::remove(const std::string& dir) {
  std::error_code ec;
  fs::remove(fs::path(dir) / kMetadata, ec);
  if (ec)
    return absl::InternalError(
        fmt::format("cannot remove {}/{}: {}", dir, kMetadata, ec.message()));
  fs::remove_all(dir, ec);
  if (ec) return absl::InternalError(fmt::format("cannot remove {}: {}", dir, ec.message()));
  return absl::OkStatus();
}

absl::StatusOr<std::string> CheckpointStorage::find_restore_point(
    const std::string& checkpoint_dir, const std::string& savepoint_dir) {
  namespace fs = std::filesystem;
  std::optional<std::string> best;
  fs::file_time_type best_time;
  auto consider = [&](const fs::path& dir) {
    std::error_code ec;
    const auto written = fs::last_write_time(dir / "_metadata", ec);
    if (!ec && (!best || written > best_time)) {
      best = dir.string();
      best_time = written;
    }
  };
  if (auto latest = find_latest(checkpoint_dir); latest.ok()) consider(*latest);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(savepoint_dir, ec)) {
    if (entry.is_directory()) consider(entry.path());
  }
  if (!best) {
    return absl::NotFoundError(fmt::format("no complete checkpoint under {} nor savepoint under {}",
                                           checkpoint_dir, savepoint_dir));
  }
  return *best;
}

}  // namespace gcpstream::runtime
