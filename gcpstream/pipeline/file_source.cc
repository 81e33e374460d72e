#include "gcpstream/pipeline/file_source.h"

#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>

#include "gcpstream/api/split_queue_reader.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/pipeline/json_value_scanner.h"
#include "gcpstream/pipeline/record_json.h"
#include "gcpstream/runtime/builtin/static_split_enumerator.h"
#include "gcpstream/util/bytes.h"

namespace gcpstream::pipeline {
namespace {

constexpr std::size_t kReadChunk = 1 << 20;

class SplitSerializer final : public VersionedSerializer<FileSplit> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const FileSplit& s) const override {
    util::ByteWriter w;
    w.put_string(s.id);
    w.put_string(s.path);
    w.put_i64(s.file_size);
    w.put_bool(s.array);
    w.put_i64(s.next_offset);
    w.put_i64(s.end_offset);
    w.put_i64(s.next_ordinal);
    return w.take();
  }
  absl::StatusOr<FileSplit> deserialize(int version, std::string_view bytes) const override {
    if (version != 1) return util::UnknownVersion("a file split", version, 1);
    util::ByteReader r(bytes);
    FileSplit s;
    GCP_ASSIGN_OR_RETURN(s.id, r.string());
    GCP_ASSIGN_OR_RETURN(s.path, r.string());
    GCP_ASSIGN_OR_RETURN(s.file_size, r.i64());
    GCP_ASSIGN_OR_RETURN(s.array, r.boolean());
    GCP_ASSIGN_OR_RETURN(s.next_offset, r.i64());
    GCP_ASSIGN_OR_RETURN(s.end_offset, r.i64());
    GCP_ASSIGN_OR_RETURN(s.next_ordinal, r.i64());
    return s;
  }
};

class StateSerializer final : public VersionedSerializer<std::vector<FileSplit>> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const std::vector<FileSplit>& splits) const override {
    util::ByteWriter w;
    w.put_u32(static_cast<std::uint32_t>(splits.size()));
    for (const auto& s : splits) {
      GCP_ASSIGN_OR_RETURN(std::string b, split_.serialize(s));
      w.put_string(b);
    }
    return w.take();
  }
  absl::StatusOr<std::vector<FileSplit>> deserialize(int version,
                                                     std::string_view bytes) const override {
    if (version != 1) return util::UnknownVersion("a file source enumerator", version, 1);
    util::ByteReader r(bytes);
    GCP_ASSIGN_OR_RETURN(std::uint32_t n, r.u32());
    std::vector<FileSplit> out;
    for (std::uint32_t i = 0; i < n; ++i) {
      GCP_ASSIGN_OR_RETURN(std::string b, r.string());
      GCP_ASSIGN_OR_RETURN(FileSplit s, split_.deserialize(1, b));
      out.push_back(std::move(s));
    }
    return out;
  }

 private:
  SplitSerializer split_;
};

const SplitSerializer kSplitSerializer;
const StateSerializer kStateSerializer;

absl::Status Framing(const std::string& path, const absl::Status& s) {
  return absl::InvalidArgumentError(fmt::format("{}: {}", path, s.message()));
}

// Reads [begin, end) of a file.
absl::StatusOr<std::string> ReadRange(const std::string& path, std::int64_t begin,
                                      std::int64_t end) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("cannot read {}", path));
  std::string out(static_cast<std::size_t>(end - begin), '\0');
  in.seekg(begin);
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  if (in.gcount() != static_cast<std::streamsize>(out.size())) {
    return absl::DataLossError(
        fmt::format("{}: could read only {} of bytes {}..{}", path, in.gcount(), begin, end));
  }
  return out;
}

// Emits from the subtask thread, one record per poll; a split's bytes are loaded when the
// split becomes current.
class Reader final : public SplitQueueReader<PipelineRecord, FileSplit> {
 public:
  using SplitQueueReader::SplitQueueReader;

  absl::StatusOr<InputStatus> poll_next(ReaderOutput<PipelineRecord>& output) override {
    InputStatus when_none;
    FileSplit* current =
        current_split([](const FileSplit& s) { return s.next_offset >= s.end_offset; }, when_none);
    if (current == nullptr) return when_none;
    FileSplit& split = *current;
    if (!loaded_) GCP_RETURN_IF_ERROR(load(split));
    const JsonValueScanner::Range range = values_[next_value_];
    const std::string_view text(buffer_.data() + (range.begin - buffer_offset_),
                                static_cast<std::size_t>(range.end - range.begin));
    PipelineRecord record;
    auto parsed = ParseRecordJson(text);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: the JSON value at byte {} does not parse: {}", split.path, range.begin,
                      parsed.status().message()));
    }
    record.fields = std::move(*parsed);
    if (!record.fields.is_object()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: the JSON value at byte {} is not an object (each record must be one)",
                      split.path, range.begin));
    }
    record.ordinal = split.next_ordinal;
    // Progress first: a checkpoint taken after this poll counts the record as emitted.
    ++next_value_;
    ++split.next_ordinal;
    split.next_offset =
        next_value_ < values_.size() ? values_[next_value_].begin : split.end_offset;
    GCP_RETURN_IF_ERROR(output.collect(std::move(record)));
    if (split.next_offset >= split.end_offset) finish_split();
    return InputStatus::kMoreAvailable;
  }

 private:
  absl::Status load(const FileSplit& split) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(split.path, ec);
    if (ec) return absl::NotFoundError(fmt::format("cannot read {}: {}", split.path, ec.message()));
    if (static_cast<std::int64_t>(size) != split.file_size) {
      return absl::FailedPreconditionError(fmt::format(
          "{} changed since its splits were planned ({} bytes then, {} now): a checkpointed "
          "offset would point into other data",
          split.path, split.file_size, size));
    }
    GCP_ASSIGN_OR_RETURN(buffer_, ReadRange(split.path, split.next_offset, split.end_offset));
    buffer_offset_ = split.next_offset;
    // A split starts at a value, so the scanner starts between values.
    JsonValueScanner scanner(split.array);
    absl::Status s = scanner.feed(buffer_, buffer_offset_);
    if (s.ok()) s = scanner.finish(split.end_offset);
    if (!s.ok()) return Framing(split.path, s);
    values_ = std::move(scanner.values());
    next_value_ = 0;
    loaded_ = true;
    if (values_.empty()) {
      return absl::InvalidArgumentError(fmt::format("{}: no JSON value in bytes {}..{}", split.path,
                                                    split.next_offset, split.end_offset));
    }
    return absl::OkStatus();
  }

  void on_split_finished() override {
    loaded_ = false;
    buffer_.clear();
    values_.clear();
  }

  bool loaded_ = false;
  std::string buffer_;
  std::int64_t buffer_offset_ = 0;
  std::vector<JsonValueScanner::Range> values_;
  std::size_t next_value_ = 0;
};

}  // namespace

absl::StatusOr<std::vector<FileSplit>> PlanFileSplits(const FileSourceSpec& spec) {
  std::ifstream in(spec.path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("cannot read the source file {}", spec.path));
  std::error_code ec;
  const auto file_size = static_cast<std::int64_t>(std::filesystem::file_size(spec.path, ec));
  if (ec) return absl::NotFoundError(fmt::format("cannot stat {}: {}", spec.path, ec.message()));

  std::string chunk(kReadChunk, '\0');
  std::int64_t offset = 0;
  bool array = spec.format == FileSourceSpec::Format::kJsonArray;
  bool decided = spec.format != FileSourceSpec::Format::kAuto;
  bool opened = false;  // array mode: the outer '[' was consumed
  std::optional<JsonValueScanner> scanner;
  if (decided && !array) scanner.emplace(false);

  std::vector<FileSplit> splits;
  std::int64_t ordinal = 0;
  std::optional<std::int64_t> split_begin;
  std::int64_t split_first_ordinal = 0;
  auto take_values = [&]() {
    for (const auto& v : scanner->values()) {
      if (!split_begin) {
        split_begin = v.begin;
        split_first_ordinal = ordinal;
      } else if (v.begin - *split_begin >= spec.split_bytes) {
        splits.push_back(FileSplit{fmt::format("{}", splits.size()), spec.path, file_size, array,
                                   *split_begin, v.begin, split_first_ordinal});
        split_begin = v.begin;
        split_first_ordinal = ordinal;
      }
      ++ordinal;
    }
    scanner->values().clear();
  };

  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    if (n == 0) break;
    std::string_view bytes(chunk.data(), n);
    std::size_t skip = 0;
    if (!scanner) {
      // Find the first non-blank byte to decide (auto) or to consume the array's '['.
      while (skip < n && std::isspace(static_cast<unsigned char>(bytes[skip]))) ++skip;
      if (skip == n) {
        offset += static_cast<std::int64_t>(n);
        continue;
      }
      if (!decided) {
        array = bytes[skip] == '[';
        decided = true;
      }
      if (array) {
        if (bytes[skip] != '[') {
          return absl::InvalidArgumentError(fmt::format(
              "{}: format json_array, but the file does not start with '['", spec.path));
        }
        ++skip;
        opened = true;
      }
      scanner.emplace(array);
    }
    absl::Status s = scanner->feed(bytes.substr(skip), offset + static_cast<std::int64_t>(skip));
    if (!s.ok()) return Framing(spec.path, s);
    take_values();
    offset += static_cast<std::int64_t>(n);
  }
  if (scanner) {
    absl::Status s = scanner->finish(offset);
    if (!s.ok()) return Framing(spec.path, s);
    take_values();
    if (opened && !scanner->closed()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: the JSON array is not closed by ']'", spec.path));
    }
  }
  if (split_begin) {
    // The last split ends after its last value (before a closing ']' or trailing blanks).
    std::int64_t end = file_size;
    splits.push_back(FileSplit{fmt::format("{}", splits.size()), spec.path, file_size, array,
                               *split_begin, end, split_first_ordinal});
  }
  return splits;
}

absl::StatusOr<std::unique_ptr<SplitEnumerator<FileSplit, std::vector<FileSplit>>>>
FileSource::create_enumerator(SplitEnumeratorContext<FileSplit>& context) const {
  GCP_ASSIGN_OR_RETURN(auto splits, PlanFileSplits(spec_));
  return std::make_unique<StaticSplitEnumerator<FileSplit>>(context, std::move(splits));
}

absl::StatusOr<std::unique_ptr<SplitEnumerator<FileSplit, std::vector<FileSplit>>>>
FileSource::restore_enumerator(SplitEnumeratorContext<FileSplit>& context,
                               std::vector<FileSplit> state) const {
  return std::make_unique<StaticSplitEnumerator<FileSplit>>(context, std::move(state));
}

absl::StatusOr<std::unique_ptr<SourceReader<PipelineRecord, FileSplit>>> FileSource::create_reader(
    SourceReaderContext& context) const {
  return std::make_unique<Reader>(context);
}

const VersionedSerializer<FileSplit>& FileSource::split_serializer() const {
  return kSplitSerializer;
}

const VersionedSerializer<std::vector<FileSplit>>& FileSource::enumerator_state_serializer() const {
  return kStateSerializer;
}

LineageVertex FileSource::lineage_vertex() const {
  LineageVertex v;
  v.role = LineageVertex::Role::kSource;
  v.connector = "file";
  v.bounded = true;
  LineageDataset d;
  d.name_space = "file://";
  // Normalised, so that "./in.json", "in.json" and a path through a symbolic link name the
  // same file (the identity a restore is matched on).
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(spec_.path, ec);
  auto canonical = std::filesystem::weakly_canonical(absolute, ec);
  d.name = (ec ? absolute.lexically_normal() : canonical).string();
  v.datasets.push_back(std::move(d));
  return v;
}

}  // namespace gcpstream::pipeline
