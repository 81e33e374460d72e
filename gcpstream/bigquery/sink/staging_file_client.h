#ifndef GCPSTREAM_BIGQUERY_SINK_STAGING_FILE_CLIENT_H_
#define GCPSTREAM_BIGQUERY_SINK_STAGING_FILE_CLIENT_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gcpstream/bigquery/sink/bigquery_serialization_schema.h"
#include "gcpstream/bigquery/sink/staged_files_ledger.h"
#include "gcpstream/bigquery/staging/avro_container.h"
#include "gcpstream/bigquery/staging/avro_row_encoder.h"
#include "gcpstream/connector/recovery_backoff.h"
#include "gcpstream/connector/sink_outcome.h"
#include "gcpstream/gcs/storage_client.h"

namespace gcpstream::bigquery {

// Where and how one table's staging files are written.
struct StagingFileOptions {
  std::string bucket;
  // Object names: "<prefix><run>/<table id>/<subtask>-<attempt>-<seq>.avro", `run` a random
  // 64-bit hex id of this writer instance, so files of failed or restarted attempts never
  // share a name with another attempt's.
  std::string prefix;
  std::string run;
  std::string table_id;
  int subtask = 0;
  int attempt = 0;
  // A file is finished and the next one begun once it reaches this size (maxStagingFileBytes,
  // 16 MiB: the spec's measured load-duration basin).
  std::int64_t max_file_bytes = 16LL << 20;
  // Bytes sent per resumable-upload chunk: a multiple of 256 KiB (the resumable-upload
  // quantum) [2 MiB]. Memory per open table is about this plus the open Avro block.
  std::int64_t chunk_bytes = 2LL << 20;
  staging::AvroCodec codec = staging::AvroCodec::kZstandard;
  std::size_t block_bytes = 1 << 20;
  // Retrying one upload call through transient failures (500 ms doubling to 10 s, 10 tries).
  connector::RecoveryOptions retry;
};

// The FILE_LOADS destination client of one table on the shared writer core: each row (the
// serializer's protobuf bytes) is encoded into Avro on the writer's thread and appended to the
// table's open staging file, which streams to Cloud Storage through a resumable upload on an
// upload thread of the client's own, in chunks of chunk_bytes. A row's outcome is OK once the
// bytes holding it are persisted; flush() (a checkpoint, the end of input) finishes the open
// file, and a finished file is recorded in the ledger before its last rows' outcomes are
// reported, so the writer's flush sees it. A file reaching max_file_bytes is finished and the
// next one begun. `file_staged` runs (on the upload thread) for every finished file.
//  - A row the encoder refuses (a value a load would refuse, AvroRowEncoder) fails alone, as a
//    row error (record-level: the failure handler decides).
//  - An upload call failing transiently is retried on `retry`, resuming from the size the
//    service reports persisted (upload_status); when the retries are spent, or on a permanent
//    failure, every row of the file and every later one fails with the stream-failure mark
//    (the job fails; nothing of the file was named by a committable).
// Thread-safe as DestinationClient requires: submit/flush on the writer's thread; outcomes
// from the upload thread.
class StagingFileClient final : public connector::DestinationClient<BigQueryRow> {
 public:
  StagingFileClient(std::string table, std::unique_ptr<staging::AvroRowEncoder> encoder,
                    std::shared_ptr<gcs::StorageClient> storage,
                    std::shared_ptr<StagedFilesLedger> ledger, StagingFileOptions options,
                    std::shared_ptr<connector::SinkOutcomeListener<BigQueryRow>> listener,
                    std::function<void()> file_staged = nullptr);
  ~StagingFileClient() override;

  void submit(BigQueryRow&& row, std::uint64_t token) override;
  void submit_solo(BigQueryRow&& row, std::uint64_t token) override;
  void flush() override;
  absl::Status shutdown() override;

 private:
  // One piece of work for the upload thread.
  struct Task {
    std::string object;       // the file's object name
    std::int64_t offset = 0;  // where `bytes` start in the object
    std::string bytes;
    bool last = false;                  // finishes the object
    std::int64_t rows = 0;              // last: rows in the file
    std::vector<std::uint64_t> tokens;  // rows whose bytes end within this task
  };
  void begin_file();
  // Hands pending_ to the upload thread in tasks of at most chunk_bytes: the quantum-aligned
  // part, or (with `last`) everything, the final task finishing the object.
  void hand_over(bool last);
  void hand_over_part(std::int64_t size, bool last);
  void upload_loop();
  // Runs one task; OK or the failure that ended the file.
  absl::Status upload(Task& task);
  void report(std::vector<std::uint64_t> tokens, const absl::Status& status);

  const std::string table_;
  std::unique_ptr<staging::AvroRowEncoder> encoder_;
  std::shared_ptr<gcs::StorageClient> storage_;
  std::shared_ptr<StagedFilesLedger> ledger_;
  const StagingFileOptions options_;
  std::shared_ptr<connector::SinkOutcomeListener<BigQueryRow>> listener_;
  std::function<void()> file_staged_;  // the filesStaged counter (upload thread)

  // Writer-thread state of the open file.
  std::unique_ptr<staging::AvroContainerWriter> file_;
  std::string object_;
  std::string datum_;        // the row being added, reused across rows
  std::string pending_;      // container bytes not yet handed over
  std::int64_t handed_ = 0;  // bytes of the file handed to the upload thread
  std::int64_t file_rows_ = 0;
  std::vector<std::uint64_t> in_block_;                       // rows in the open Avro block
  std::vector<std::pair<std::int64_t, std::uint64_t>> ends_;  // (end offset, token)
  std::int64_t sequence_ = 0;

  // Shared with the upload thread.
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Task> tasks_;
  bool stopping_ = false;
  absl::Status failed_;  // once set, every row fails with it
  // failed_ is set: read by the writer thread per row without taking mu_.
  std::atomic<bool> has_failed_{false};
  std::string session_;  // the open file's resumable session (upload thread only)
  std::thread uploader_;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_STAGING_FILE_CLIENT_H_
