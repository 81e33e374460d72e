#ifndef GCPSTREAM_PIPELINE_FILE_SOURCE_H_
#define GCPSTREAM_PIPELINE_FILE_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gcpstream/api/lineage.h"
#include "gcpstream/api/source.h"
#include "gcpstream/pipeline/pipeline_record.h"
#include "gcpstream/pipeline/pipeline_spec.h"

namespace gcpstream::pipeline {

// A byte range of the file holding whole JSON values: [next_offset, end_offset). `next_offset`
// is always the first byte of a value not yet emitted (or end_offset when the split is done),
// and `next_ordinal` that value's 0-based position in the whole file.
struct FileSplit {
  std::string id;
  std::string path;
  std::int64_t file_size = 0;  // checked on read: a changed file fails rather than misreads
  bool array = false;          // JSON array (values separated by commas) or JSON lines
  std::int64_t next_offset = 0;
  std::int64_t end_offset = 0;
  std::int64_t next_ordinal = 0;
  std::string split_id() const { return id; }
  friend bool operator==(const FileSplit&, const FileSplit&) = default;
};

// Plans the splits of a file: one scan finds where every top-level value starts (strings,
// escapes and nesting are respected), counts them for the ordinals, and cuts the file into
// ranges of about `split_bytes`, each boundary moved forward to the next value's first byte.
// INVALID_ARGUMENT for malformed framing (an unclosed value or array), NOT_FOUND for an
// unreadable file.
absl::StatusOr<std::vector<FileSplit>> PlanFileSplits(const FileSourceSpec& spec);

// A bounded source reading JSON objects from one file, each a PipelineRecord (fields = the
// object; ordinal = its position in the file; no event time). Splits are handed out on request
// to the readers; each reader checkpoints its splits' next offset and ordinal, so a restore
// resumes after the last emitted record: nothing is lost or read twice by the source.
//
// The split plan is computed when the enumerator is created (on the coordinator thread: a
// sequential read of the whole file). A reader loads one split's bytes at a time (about
// `split_bytes`). A value that is not a JSON object, or does not parse, fails the job naming
// the file and byte offset.
//
// Immutable; thread-safe.
class FileSource final : public Source<PipelineRecord, FileSplit, std::vector<FileSplit>>,
                         public LineageVertexProvider {
 public:
  explicit FileSource(FileSourceSpec spec) : spec_(std::move(spec)) {}

  Boundedness boundedness() const override { return Boundedness::kBounded; }
  absl::StatusOr<std::unique_ptr<SplitEnumerator<FileSplit, std::vector<FileSplit>>>>
  create_enumerator(SplitEnumeratorContext<FileSplit>& context) const override;
  absl::StatusOr<std::unique_ptr<SplitEnumerator<FileSplit, std::vector<FileSplit>>>>
  restore_enumerator(SplitEnumeratorContext<FileSplit>& context,
                     std::vector<FileSplit> state) const override;
  absl::StatusOr<std::unique_ptr<SourceReader<PipelineRecord, FileSplit>>> create_reader(
      SourceReaderContext& context) const override;
  const VersionedSerializer<FileSplit>& split_serializer() const override;
  const VersionedSerializer<std::vector<FileSplit>>& enumerator_state_serializer() const override;

  LineageVertex lineage_vertex() const override;

 private:
  FileSourceSpec spec_;
};

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_FILE_SOURCE_H_
