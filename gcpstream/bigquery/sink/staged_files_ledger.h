#ifndef GCPSTREAM_BIGQUERY_SINK_STAGED_FILES_LEDGER_H_
#define GCPSTREAM_BIGQUERY_SINK_STAGED_FILES_LEDGER_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "gcpstream/bigquery/sink/staged_files.h"
#include "gcpstream/connector/committing_sink_writer_front.h"

namespace gcpstream::bigquery {

// The FILE_LOADS writer's book of finished staging files, per table, until a checkpoint names
// them in committables. Staging clients record a file once its upload completed (on their
// upload threads); the writer takes them at the checkpoint, after flush() finished every open
// file. A file still being written is not here: at a crash it is abandoned (its name is
// unique to the attempt, and no load references it). The writer keeps no state of its own
// (snapshot() is empty): everything finished is in a committable. Thread-safe.
class StagedFilesLedger final
    : public connector::CheckpointedWriterState<StagedFiles, StagedFiles> {
 public:
  // A finished object of `table`, holding `rows` rows in `bytes` bytes.
  void finished(const std::string& table, const std::string& uri, std::int64_t rows,
                std::int64_t bytes);
  // One committable per table with files finished since the last call, stamped with
  // `checkpoint_id` (INT64_MAX, the end of a bounded input, becomes -1, as StagedFiles wants).
  std::vector<StagedFiles> prepare_commit_at(std::int64_t checkpoint_id) override;
  // Without a checkpoint id: stamped -1, as at the end of input.
  std::vector<StagedFiles> prepare_commit() override;
  std::vector<StagedFiles> snapshot() const override { return {}; }
  // True when no finished file of `table` waits for a committable.
  bool clean(const std::string& table) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, StagedFiles> pending_;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_STAGED_FILES_LEDGER_H_
