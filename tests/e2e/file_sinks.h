#ifndef GCPSTREAM_TESTS_E2E_FILE_SINKS_H_
#define GCPSTREAM_TESTS_E2E_FILE_SINKS_H_

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "gcpstream/api/sink.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/util/bytes.h"

// Two file sinks for the crash tests: one at-least-once (append + fsync at every flush), one
// two-phase-commit (write a temporary file, rename it into place on commit).
namespace gcpstream::e2e {

// A record line carries a check value so that a line torn by a kill is recognised and ignored.
inline std::string RecordLine(std::int64_t v) {
  return fmt::format("{},{}\n", v, static_cast<std::uint64_t>(v) * 2654435761ULL % 1000003ULL);
}

inline absl::Status WriteAll(int fd, const std::string& data, const std::string& path) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(fmt::format("write {}: {}", path, std::strerror(errno)));
    }
    done += static_cast<std::size_t>(n);
  }
  return absl::OkStatus();
}

inline absl::Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return absl::InternalError("cannot open " + dir);
  ::fsync(fd);
  ::close(fd);
  return absl::OkStatus();
}

// At-least-once: every subtask appends to alo-<subtask>.txt; flush() (at every barrier and at
// end of input) writes the buffer and fsyncs. A replay after restore appends again.
class AppendFileSink final : public Sink<std::int64_t> {
 public:
  explicit AppendFileSink(std::string dir) : dir_(std::move(dir)) {}
  absl::StatusOr<std::unique_ptr<SinkWriter<std::int64_t>>> create_writer(
      WriterInitContext& ctx) const override {
    const std::string path = fmt::format("{}/alo-{}.txt", dir_, ctx.subtask_index());
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return absl::InternalError("cannot open " + path);
    return std::unique_ptr<SinkWriter<std::int64_t>>(new Writer(fd, path));
  }

 private:
  class Writer final : public SinkWriter<std::int64_t> {
   public:
    Writer(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
    ~Writer() override {
      if (fd_ >= 0) ::close(fd_);
    }
    absl::Status write(const std::int64_t& v, const SinkWriterContext&) override {
      buffer_ += RecordLine(v);
      return absl::OkStatus();
    }
    absl::Status flush(bool) override {
      GCP_RETURN_IF_ERROR(WriteAll(fd_, buffer_, path_));
      buffer_.clear();
      if (::fsync(fd_) != 0) return absl::InternalError("fsync " + path_);
      return absl::OkStatus();
    }
    absl::Status close() override {
      if (fd_ >= 0) ::close(fd_);
      fd_ = -1;
      return absl::OkStatus();
    }

   private:
    int fd_;
    std::string path_;
    std::string buffer_;
  };
  std::string dir_;
};

// Two-phase commit: the writer fills tmp/<unique>.part; prepare_commit() fsyncs and closes it
// and hands over {temp, final}; the committer renames it to committed/<unique>.txt. Renaming is
// idempotent: a committable whose final file exists was committed before.
struct FileCommittable {
  std::string temp_path;
  std::string final_path;
};

class RenameFileSink final : public Sink<std::int64_t>, public SupportsCommitter<FileCommittable> {
 public:
  RenameFileSink(std::string dir, std::chrono::milliseconds commit_delay)
      : dir_(std::move(dir)), commit_delay_(commit_delay) {
    std::filesystem::create_directories(dir_ + "/tmp");
    std::filesystem::create_directories(dir_ + "/committed");
  }
  absl::StatusOr<std::unique_ptr<SinkWriter<std::int64_t>>> create_writer(
      WriterInitContext& ctx) const override {
    return std::unique_ptr<SinkWriter<std::int64_t>>(new Writer(dir_, ctx.subtask_index()));
  }
  absl::StatusOr<std::unique_ptr<Committer<FileCommittable>>> create_committer(
      CommitterInitContext&) const override {
    return std::unique_ptr<Committer<FileCommittable>>(new RenameCommitter(dir_, commit_delay_));
  }
  const VersionedSerializer<FileCommittable>& committable_serializer() const override {
    static const Serializer serializer;
    return serializer;
  }

 private:
  class Writer final : public CommittingSinkWriter<std::int64_t, FileCommittable> {
   public:
    Writer(std::string dir, int subtask) : dir_(std::move(dir)), subtask_(subtask) {
      std::random_device rd;
      id_ = fmt::format("{:x}-{}", std::uniform_int_distribution<std::uint64_t>()(rd), subtask_);
    }
    ~Writer() override {
      if (fd_ >= 0) ::close(fd_);
    }
    absl::Status write(const std::int64_t& v, const SinkWriterContext&) override {
      buffer_ += RecordLine(v);
      if (buffer_.size() > (1 << 16)) return spill();
      return absl::OkStatus();
    }
    absl::Status flush(bool) override { return spill(); }
    absl::StatusOr<std::vector<FileCommittable>> prepare_commit() override {
      GCP_RETURN_IF_ERROR(spill());
      std::vector<FileCommittable> out;
      if (fd_ < 0) return out;
      if (::fsync(fd_) != 0) return absl::InternalError("fsync " + temp_);
      ::close(fd_);
      fd_ = -1;
      out.push_back({temp_, fmt::format("{}/committed/{}-{}.txt", dir_, id_, part_)});
      ++part_;
      return out;
    }
    absl::Status close() override {
      if (fd_ >= 0) ::close(fd_);
      fd_ = -1;
      return absl::OkStatus();
    }

   private:
    absl::Status spill() {
      if (buffer_.empty()) return absl::OkStatus();
      if (fd_ < 0) {
        temp_ = fmt::format("{}/tmp/{}-{}.part", dir_, id_, part_);
        fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd_ < 0) return absl::InternalError("cannot create " + temp_);
      }
      GCP_RETURN_IF_ERROR(WriteAll(fd_, buffer_, temp_));
      buffer_.clear();
      return absl::OkStatus();
    }
    std::string dir_;
    int subtask_;
    std::string id_;
    int part_ = 0;
    int fd_ = -1;
    std::string temp_;
    std::string buffer_;
  };

  class RenameCommitter final : public Committer<FileCommittable> {
   public:
    RenameCommitter(std::string dir, std::chrono::milliseconds delay)
        : dir_(std::move(dir)), delay_(delay) {}
    absl::Status commit(std::vector<CommitRequest<FileCommittable>>& requests) override {
      // Widens the window between a durable checkpoint and its commit, where a kill must
      // neither lose nor duplicate.
      if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
      for (auto& r : requests) {
        const auto& c = r.committable();
        if (std::filesystem::exists(c.final_path)) {
          r.signal_already_committed();
          continue;
        }
        if (::rename(c.temp_path.c_str(), c.final_path.c_str()) != 0) {
          r.signal_failed_with_known_reason(absl::DataLossError(fmt::format(
              "committable {} has neither its temporary nor its final file", c.temp_path)));
        }
      }
      return SyncDir(dir_ + "/committed");
    }

   private:
    std::string dir_;
    std::chrono::milliseconds delay_;
  };

  class Serializer final : public VersionedSerializer<FileCommittable> {
   public:
    int version() const override { return 1; }
    absl::StatusOr<std::string> serialize(const FileCommittable& c) const override {
      util::ByteWriter w;
      w.put_string(c.temp_path);
      w.put_string(c.final_path);
      return w.take();
    }
    absl::StatusOr<FileCommittable> deserialize(int version,
                                                std::string_view bytes) const override {
      if (version != 1) return util::UnknownVersion("a file committable", version, 1);
      util::ByteReader r(bytes);
      FileCommittable c;
      GCP_ASSIGN_OR_RETURN(c.temp_path, r.string());
      GCP_ASSIGN_OR_RETURN(c.final_path, r.string());
      return c;
    }
  };

  std::string dir_;
  std::chrono::milliseconds commit_delay_;
};

}  // namespace gcpstream::e2e

#endif  // GCPSTREAM_TESTS_E2E_FILE_SINKS_H_
