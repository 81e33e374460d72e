#ifndef GCPSTREAM_BIGQUERY_SINK_BUFFERED_STREAM_LEDGER_H_
#define GCPSTREAM_BIGQUERY_SINK_BUFFERED_STREAM_LEDGER_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/api/versioned_serializer.h"
#include "gcpstream/connector/committing_sink_writer_front.h"

namespace gcpstream::bigquery {

// A place in one table's BUFFERED write stream: rows [0, offset) of `stream` are appended and
// acknowledged. It is both the exactly-once writer's state (where the restored writer resumes)
// and its committable (FlushRows up to and including offset - 1 makes those rows visible).
struct BufferedStreamPosition {
  std::string table;   // "projects/P/datasets/D/tables/T"
  std::string stream;  // ".../tables/T/streams/ID", as CreateWriteStream named it
  std::int64_t offset = 0;
  friend bool operator==(const BufferedStreamPosition&, const BufferedStreamPosition&) = default;
};

// Version 1: table, stream (length-prefixed), offset (int64). DATA_LOSS for bytes that do not
// parse or name no stream or a negative offset; FAILED_PRECONDITION for an unknown version.
class BufferedStreamPositionSerializer final : public VersionedSerializer<BufferedStreamPosition> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const BufferedStreamPosition& p) const override;
  absl::StatusOr<BufferedStreamPosition> deserialize(int version,
                                                     std::string_view bytes) const override;
};

// The exactly-once writer's book of its streams, one entry per table: the stream, how far it
// is acknowledged, and how far a committable already names. The stream clients write to it as
// appends are acknowledged; the writer reads it at the checkpoint, after flush() drained every
// append. Thread-safe.
class BufferedStreamLedger final
    : public connector::CheckpointedWriterState<BufferedStreamPosition, BufferedStreamPosition> {
 public:
  // `restored`: the writer states this subtask received. Several for one table (a scale-in)
  // keep the first; the others' rows are already named by restored committables.
  explicit BufferedStreamLedger(std::vector<BufferedStreamPosition> restored = {});

  // The restored position of `table` for its client to probe and adopt, once; nothing when
  // the table was not restored or was adopted already.
  std::optional<BufferedStreamPosition> adopt(const std::string& table);
  // Rows [0, end) of `stream` are acknowledged. A stream other than the table's current one
  // replaces it (a fresh stream after an abandoned one): nothing of it is committed yet.
  void acknowledged(const std::string& table, const std::string& stream, std::int64_t end);
  // One committable per table acknowledged past what an earlier committable named; marks them
  // named.
  std::vector<BufferedStreamPosition> prepare_commit() override;
  // Every table's stream and acknowledged end, restored tables not yet adopted included.
  std::vector<BufferedStreamPosition> snapshot() const override;
  // True when every acknowledged row of `table` is named by a committable (or it has no entry):
  // its client may be released without losing what the next commit needs.
  bool clean(const std::string& table) const;
  // Forgets `table` (its client was released while clean).
  void release(const std::string& table);

 private:
  struct Entry {
    std::string stream;
    std::int64_t end = 0;
    std::int64_t committed = 0;
    bool restored = false;  // not adopted yet
  };
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_BUFFERED_STREAM_LEDGER_H_
