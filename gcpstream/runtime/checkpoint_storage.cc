#include "gcpstream/runtime/checkpoint_storage.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/runtime/proto/checkpoint.pb.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::runtime {
namespace {

namespace fs = std::filesystem;
constexpr char kMetadata[] = "_metadata";

// zlib's CRC-32 of `bytes` (chunked: crc32() takes a 32-bit length).
std::uint32_t Crc32(std::string_view bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (!bytes.empty()) {
    const std::size_t n = std::min<std::size_t>(bytes.size(), 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n));
    bytes.remove_prefix(n);
  }
  return static_cast<std::uint32_t>(crc);
}

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

// Whether anything is named _metadata (a dangling symlink included): a checkpoint whose
// _metadata is not a readable regular file is damaged, not one still being written.
bool HasMetadata(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(dir / kMetadata, ec));
}

// A checkpoint's metadata lists its state files; even a job of thousands of subtasks writes a
// few MiB. Anything larger is damage, refused before it is read into memory.
constexpr std::uintmax_t kMaxMetadataBytes = 64ULL << 20;

// The bytes of a checkpoint file. NOT_FOUND when nothing is there; DATA_LOSS (the checkpoint is
// damaged) unless it is a regular file of at most `max_bytes`: a directory, a FIFO whose read
// would block, a device, or a file larger than it can be is never read.
absl::StatusOr<std::string> ReadCheckpointFile(const fs::path& path, std::uintmax_t max_bytes) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) return absl::NotFoundError(fmt::format("cannot read {}", path.string()));
  if (!fs::is_regular_file(status)) {
    return absl::DataLossError(fmt::format(
        "{} is not a regular file, so the checkpoint is damaged; restore from another one",
        path.string()));
  }
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) {
    return absl::DataLossError(fmt::format("cannot size {}: {}", path.string(), ec.message()));
  }
  if (size > max_bytes) {
    return absl::DataLossError(fmt::format("{} is corrupt: {} bytes, more than the {} expected",
                                           path.string(), size, max_bytes));
  }
  return ReadFile(path.string());
}

absl::StatusOr<std::string> ReadMetadata(const fs::path& dir) {
  return ReadCheckpointFile(dir / kMetadata, kMaxMetadataBytes);
}

// chk-<n> -> n, or -1.
std::int64_t CheckpointNumber(const fs::path& dir) {
  const std::string name = dir.filename().string();
  if (name.rfind("chk-", 0) != 0 || name.size() == 4 || name.size() > 4 + 18) return -1;
  // Digits only: "chk-30s" or "chk-2-old" is not a checkpoint this storage wrote.
  std::int64_t n = 0;
  for (std::size_t i = 4; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
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
  for (const auto& [uid, identity] : cp.operator_identities) {
    auto* entry = metadata.add_operator_identities();
    entry->set_uid(uid);
    entry->set_identity(identity);
  }
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
      ref->set_crc32(Crc32(bytes));
    }
  }
  std::string bytes;
  if (!metadata.SerializeToString(&bytes)) {
    return absl::InternalError("cannot serialize checkpoint metadata");
  }
  metadata.set_crc32(Crc32(bytes));
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
  GCP_ASSIGN_OR_RETURN(std::string bytes, ReadMetadata(dir));
  proto::CheckpointMetadata metadata;
  if (bytes.empty() || !metadata.ParseFromString(bytes) || metadata.format_version() == 0) {
    // Every version this code ever wrote is >= 1: an empty or versionless file is damage, not
    // an old format.
    return absl::DataLossError(
        fmt::format("{}/{} is corrupt{}", dir, kMetadata, bytes.empty() ? " (empty)" : ""));
  }
  if (metadata.format_version() != kFormatVersion) {
    return absl::FailedPreconditionError(
        fmt::format("{} was written in checkpoint format version {}; this build reads version {}",
                    dir, metadata.format_version(), kFormatVersion));
  }
  // After the version: a future format may sum differently.
  if (metadata.has_crc32()) {
    proto::CheckpointMetadata unsummed = metadata;
    unsummed.clear_crc32();
    std::string again;
    if (!unsummed.SerializeToString(&again) || Crc32(again) != metadata.crc32()) {
      return absl::DataLossError(
          fmt::format("{}/{} is corrupt: its checksum does not match its content", dir, kMetadata));
    }
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
  for (const auto& entry : metadata.operator_identities()) {
    cp.operator_identities[entry.uid()] = entry.identity();
  }
  for (const auto& op : metadata.operators()) {
    auto& state = cp.operators[op.uid()];
    state.parallelism = op.parallelism();
    for (const auto& file : op.files()) {
      const std::string path = dir + "/" + file.file_name();
      auto content = ReadCheckpointFile(path, file.size_bytes());
      if (absl::IsNotFound(content.status())) {
        return absl::DataLossError(
            fmt::format("checkpoint {} lacks state file {}", dir, file.file_name()));
      }
      if (!content.ok()) return content.status();
      proto::OperatorSubtaskState subtask;
      if (content->size() != file.size_bytes()) {
        return absl::DataLossError(fmt::format("state file {} is corrupt: {} bytes, {} expected",
                                               path, content->size(), file.size_bytes()));
      }
      if (file.has_crc32() && Crc32(*content) != file.crc32()) {
        return absl::DataLossError(fmt::format(
            "state file {} is corrupt: its CRC-32 is {:08x}, the checkpoint recorded {:08x}", path,
            Crc32(*content), file.crc32()));
      }
      if (!subtask.ParseFromString(*content)) {
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
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    return absl::NotFoundError(fmt::format("{} is not a directory", path));
  }
  // The same order a restart uses (what each _metadata records), without savepoints.
  auto points = list_restore_points(path, "");
  if (points.empty()) {
    return absl::NotFoundError(fmt::format("no complete checkpoint under {}", path));
  }
  return points.front();
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

absl::StatusOr<std::vector<std::string>> CheckpointStorage::apply_retention(
    const std::string& job_dir, std::int64_t completed_id, int retained) {
  std::error_code ec;
  std::vector<std::pair<std::int64_t, fs::path>> complete;
  std::vector<fs::path> remove_now;
  for (const auto& entry : fs::directory_iterator(job_dir, ec)) {
    if (!entry.is_directory()) continue;
    const std::int64_t n = CheckpointNumber(entry.path());
    if (n < 0 || n > completed_id) continue;  // not a checkpoint, or one still being written
    if (HasMetadata(entry.path())) {
      complete.emplace_back(n, entry.path());
    } else if (n < completed_id) {
      remove_now.push_back(entry.path());  // abandoned by an attempt that died or aborted it
    }
  }
  if (ec) return absl::InternalError(fmt::format("cannot list {}: {}", job_dir, ec.message()));
  std::sort(complete.begin(), complete.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = static_cast<std::size_t>(std::max(1, retained)); i < complete.size(); ++i) {
    remove_now.push_back(complete[i].second);
  }
  std::vector<std::string> removed;
  absl::Status status;
  for (const auto& dir : remove_now) {
    absl::Status s = remove(dir.string());
    if (s.ok()) {
      removed.push_back(dir.string());
    } else {
      status.Update(s);
    }
  }
  if (!status.ok()) return status;
  return removed;
}

namespace {

// The chk-<n> directories under `root`: root itself when it is one, its chk-<n>, and the
// chk-<n> of each job directory in it.
std::vector<fs::path> CheckpointDirs(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  if (HasMetadata(root)) {  // a checkpoint or savepoint named directly
    out.push_back(root);
    return out;
  }
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory()) continue;
    if (CheckpointNumber(entry.path()) >= 0) {
      out.push_back(entry.path());
      continue;
    }
    std::error_code inner;
    for (const auto& nested : fs::directory_iterator(entry.path(), inner)) {
      if (nested.is_directory() && CheckpointNumber(nested.path()) >= 0) {
        out.push_back(nested.path());
      }
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> CheckpointStorage::list_restore_points(const std::string& checkpoint_dir,
                                                                const std::string& savepoint_dir) {
  struct Candidate {
    std::int64_t taken_ms;
    std::int64_t id;
    fs::path dir;
  };
  std::vector<Candidate> candidates;
  auto consider = [&](const fs::path& dir) {
    if (!HasMetadata(dir)) return;
    // Ordered by what the checkpoint itself records (when it was taken, its id), not by file
    // times, which a copy or a clock step changes. A _metadata that does not parse sorts
    // first, so that read() reports the damage instead of an older one being taken silently.
    Candidate c{std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::max(),
                dir};
    auto bytes = ReadMetadata(dir);
    proto::CheckpointMetadata metadata;
    if (bytes.ok() && !bytes->empty() && metadata.ParseFromString(*bytes) &&
        metadata.format_version() != 0) {
      c.taken_ms = metadata.timestamp_ms();
      c.id = metadata.checkpoint_id();
    }
    candidates.push_back(std::move(c));
  };
  for (const auto& dir : CheckpointDirs(checkpoint_dir)) consider(dir);
  if (!savepoint_dir.empty()) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(savepoint_dir, ec)) {
      if (entry.is_directory()) consider(entry.path());
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    if (a.taken_ms != b.taken_ms) return a.taken_ms > b.taken_ms;
    return a.id > b.id;
  });
  std::vector<std::string> out;
  out.reserve(candidates.size());
  for (auto& c : candidates) out.push_back(c.dir.string());
  return out;
}

std::vector<std::string> CheckpointStorage::list_incomplete(const std::string& checkpoint_dir) {
  std::vector<std::string> out;
  for (const auto& dir : CheckpointDirs(checkpoint_dir)) {
    if (!HasMetadata(dir)) out.push_back(dir.string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<std::string> CheckpointStorage::find_restore_point(
    const std::string& checkpoint_dir, const std::string& savepoint_dir) {
  auto points = list_restore_points(checkpoint_dir, savepoint_dir);
  if (points.empty()) {
    return absl::NotFoundError(fmt::format("no complete checkpoint under {} nor savepoint under {}",
                                           checkpoint_dir, savepoint_dir));
  }
  return points.front();
}

}  // namespace gcpstream::runtime
