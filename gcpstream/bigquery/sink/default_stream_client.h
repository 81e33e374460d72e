#ifndef GCPSTREAM_BIGQUERY_SINK_DEFAULT_STREAM_CLIENT_H_
#define GCPSTREAM_BIGQUERY_SINK_DEFAULT_STREAM_CLIENT_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gcpstream/bigquery/client/stream_appender.h"
#include "gcpstream/bigquery/sink/append_batch.h"
#include "gcpstream/bigquery/sink/bigquery_serialization_schema.h"
#include "gcpstream/bigquery/sink/bigquery_writer_options.h"
#include "gcpstream/connector/sink_outcome.h"
#include "gcpstream/util/timer_thread.h"

namespace gcpstream::bigquery {

// The at-least-once writer's client for one table: rows are batched up to
// max_append_request_bytes and appended to the table's `_default` stream through one
// StreamAppender. A failed append is retried here first (the in-stream retries of
// BigQueryWriterOptions), resending the same rows — duplicates are possible, as at-least-once
// allows — and reported only when the retries are spent. A request refused for some of its
// rows (row_errors) reports those rows as record-level failures and the others as refused with
// their request, for the writer to resend.
//
// submit / submit_solo / flush run on the writer's thread and never block: when the
// connection's window (max_inflight_requests, max_inflight_bytes) is full, the send moves to the
// retry timer's thread, which waits for room. The writer core's own caps (max_in_flight_rows,
// max_in_flight_bytes) are the back-pressure on the job. Outcomes go to the listener from the
// appender's reader thread or the timer's.
class DefaultStreamClient final : public connector::DestinationClient<BigQueryRow>,
                                  public std::enable_shared_from_this<DefaultStreamClient> {
 public:
  DefaultStreamClient(std::shared_ptr<BigQueryWriteStub> stub, std::string table_name,
                      google::protobuf::DescriptorProto writer_descriptor,
                      BigQueryWriterOptions options,
                      std::shared_ptr<connector::SinkOutcomeListener<BigQueryRow>> listener,
                      std::shared_ptr<util::TimerThread> timers,
                      std::function<void()> on_retry = nullptr);
  ~DefaultStreamClient() override;

  void submit(BigQueryRow&& row, std::uint64_t token) override;
  void submit_solo(BigQueryRow&& row, std::uint64_t token) override;
  void flush() override;
  absl::Status shutdown() override;
  // After the writer created the table: the next append opens a fresh connection.
  void resume_parked() override;

 private:
  struct Batch : AppendBatch {
    std::chrono::steady_clock::time_point first_sent;
  };

  // Appends `batch`; only with `may_wait` (off the writer's thread) may it wait for the window.
  void send(std::shared_ptr<Batch> batch, bool may_wait = false);
  void on_outcome(std::shared_ptr<Batch> batch, AppendOutcome outcome);
  void fail(std::shared_ptr<Batch> batch, const absl::Status& status);
  void finished();  // one batch reported; wakes shutdown()
  // Schedules the unanswered-append watchdog (append_answer_timeout) unless it is scheduled.
  void arm_watchdog();
  std::shared_ptr<StreamAppender> appender();

  std::shared_ptr<BigQueryWriteStub> stub_;
  StreamAppenderOptions appender_options_;
  BigQueryWriterOptions options_;
  std::shared_ptr<connector::SinkOutcomeListener<BigQueryRow>> listener_;
  std::shared_ptr<util::TimerThread> timers_;
  std::function<void()> on_retry_;  // any thread

  std::shared_ptr<Batch> current_;  // writer thread only

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<StreamAppender> appender_;
  std::vector<std::shared_ptr<StreamAppender>> retired_;
  std::int64_t outstanding_ = 0;  // batches sent or waiting for a retry, not yet reported
  std::set<std::shared_ptr<Batch>> waiting_retry_;
  bool closing_ = false;
  bool watchdog_armed_ = false;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_DEFAULT_STREAM_CLIENT_H_
