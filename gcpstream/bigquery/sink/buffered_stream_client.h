#ifndef GCPSTREAM_BIGQUERY_SINK_BUFFERED_STREAM_CLIENT_H_
#define GCPSTREAM_BIGQUERY_SINK_BUFFERED_STREAM_CLIENT_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gcpstream/bigquery/client/stream_appender.h"
#include "gcpstream/bigquery/sink/append_batch.h"
#include "gcpstream/bigquery/sink/bigquery_serialization_schema.h"
#include "gcpstream/bigquery/sink/bigquery_writer_options.h"
#include "gcpstream/bigquery/sink/buffered_stream_ledger.h"
#include "gcpstream/connector/sink_outcome.h"

namespace gcpstream::bigquery {

// Marks a failure of the stream itself (STREAM_FINALIZED, STREAM_NOT_FOUND, a consistency
// guard, retries spent): the job fails and the restore protocol is the repair. Never a
// missing table, never a row.
inline constexpr char kStreamFailurePayload[] = "gcpstream.bigquery/stream_failure";

// The exactly-once writer's client for one table: rows are batched up to
// max_append_request_bytes and appended at explicit offsets to one BUFFERED write stream,
// created on the first append and kept for the writer's life (CreateWriteStream churn is not
// how the API is meant to be used). Acknowledged rows stay invisible until the committer
// flushes them; the ledger records how far the stream is acknowledged.
//
// A restored table first probes its checkpointed stream: the first batch is appended at the
// restored offset, synchronously (transient failures retried on the recovery schedule).
// Success keeps the stream. OFFSET_ALREADY_EXISTS (the crashed
// attempt appended further), OFFSET_OUT_OF_RANGE, a finalized or unknown stream, or a probe
// that keeps failing abandon it for a fresh stream at offset 0: rows past the restored offset
// were never named by a committable, so nothing ever flushes them. No stream is ever finalized
// (a finalized stream refuses FlushRows, which a restored committable may still need).
//
// When an append fails, sending pauses until every append in flight is answered, then:
//  - transient failures (RetriableAppend, the unanswered-append watchdog's cut included) and
//    the OFFSET_OUT_OF_RANGE of appends stranded behind them are re-appended in order at their
//    original offsets on the same stream (its connection reopened), under the recovery
//    schedule (BigQueryWriterOptions::recovery: 500 ms doubling to 10 s, 10 attempts, ±25 %);
//    OFFSET_ALREADY_EXISTS on a re-append means the original landed;
//  - a request refused for some rows (row_errors; nothing of it is applied) reports those rows
//    as row errors and its other rows, and every append behind it, as refused with their
//    request (kRefusedWithItsRequestPayload), so the writer re-submits them at new offsets;
//  - anything else, spent retries, OFFSET_OUT_OF_RANGE on a re-append, an acknowledgement behind
//    a refused request or an offset echo that differs fail the job (kStreamFailurePayload).
// A CreateWriteStream failure and SCHEMA_MISMATCH_EXTRA_FIELDS (the request refused whole, what
// follows it resent at new offsets) are reported unmarked, so the writer may create or widen the
// table.
//
// submit / submit_solo / flush run on the writer's thread and never block: sends, the probe,
// stream creation, re-appends and the unanswered-append watchdog run on the client's own
// worker thread, which waits for the appender's window (the back-pressure). Outcomes reach the
// listener from that thread or the appender's reader thread.
class BufferedStreamClient final : public connector::DestinationClient<BigQueryRow>,
                                   public std::enable_shared_from_this<BufferedStreamClient> {
 public:
  BufferedStreamClient(std::shared_ptr<BigQueryWriteStub> stub, std::string table_name,
                       google::protobuf::DescriptorProto writer_descriptor,
                       BigQueryWriterOptions options, std::shared_ptr<BufferedStreamLedger> ledger,
                       std::shared_ptr<connector::SinkOutcomeListener<BigQueryRow>> listener,
                       std::function<void()> on_retry = nullptr);
  ~BufferedStreamClient() override;

  // Starts the worker thread; call once, before the first submit.
  void start();

  void submit(BigQueryRow&& row, std::uint64_t token) override;
  void submit_solo(BigQueryRow&& row, std::uint64_t token) override;
  void flush() override;
  absl::Status shutdown() override;
  // After the writer created or widened the table: the next append creates the stream if there
  // is none, or reopens the connection to it (the service checks the writer schema per
  // connection); the stream and its offset stay.
  void resume_parked() override;

 private:
  struct Batch : AppendBatch {
    std::int64_t offset = -1;
    bool done = false;  // answered (or failed to send); guarded by mu_
    AppendOutcome outcome;
  };
  using BatchPtr = std::shared_ptr<Batch>;
  enum class Established { kReady, kConsumed, kFailed };

  void enqueue(BatchPtr batch);
  void run();  // the worker thread
  bool repair_due_locked() const;
  void send(BatchPtr batch);
  // Makes sure a stream exists: probes the restored one with `batch` (kConsumed: the batch is
  // reported) or creates a fresh one. kFailed: the batch is reported with the failure.
  Established establish(const BatchPtr& batch);
  absl::StatusOr<std::string> create_stream();
  void repair();
  AppendOutcome append_and_wait(const BatchPtr& batch, std::int64_t offset);
  void on_outcome(const BatchPtr& batch, AppendOutcome outcome);
  // False when the client started closing while it waited.
  bool sleep_for(std::chrono::milliseconds delay);
  void open_appender_locked(const std::string& stream);

  void report_success(const BatchPtr& batch);
  void report_failure(const BatchPtr& batch, const absl::Status& status);
  void report_row_errors(const BatchPtr& batch, const storage_v1::AppendRowsResponse& response);
  void report_refused_with_request(const BatchPtr& batch);
  void finished();

  std::shared_ptr<BigQueryWriteStub> stub_;
  const std::string table_;
  StreamAppenderOptions appender_options_;
  BigQueryWriterOptions options_;
  std::shared_ptr<BufferedStreamLedger> ledger_;
  std::shared_ptr<connector::SinkOutcomeListener<BigQueryRow>> listener_;
  std::function<void()> on_retry_;

  BatchPtr current_;  // writer thread only

  mutable std::mutex mu_;
  std::condition_variable cv_;       // the worker's wake-up
  std::condition_variable idle_cv_;  // outstanding_ reached 0
  std::deque<BatchPtr> queue_;       // waiting for the worker
  std::deque<BatchPtr> in_flight_;   // sent, in offset order
  std::shared_ptr<StreamAppender> appender_;
  std::vector<std::shared_ptr<StreamAppender>> retired_;
  std::string stream_;            // empty until established
  std::int64_t next_offset_ = 0;  // where the next append goes
  std::int64_t acked_end_ = 0;    // rows [0, acked_end_) acknowledged
  std::int64_t outstanding_ = 0;  // batches accepted and not yet reported
  bool repairing_ = false;
  bool reopen_ = false;
  // A restored position whose probe was refused for some rows: the next batch probes again.
  // Worker thread only.
  std::optional<BufferedStreamPosition> unproven_;
  absl::Status broken_;  // a stream failure: everything after it fails the same way
  bool closing_ = false;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_BUFFERED_STREAM_CLIENT_H_
