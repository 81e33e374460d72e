#ifndef GCPSTREAM_API_SOURCE_READER_H_
#define GCPSTREAM_API_SOURCE_READER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/api/mailbox.h"
#include "gcpstream/api/metrics.h"
#include "gcpstream/api/record.h"
#include "gcpstream/api/source_event.h"

namespace gcpstream {

// What poll_next() found.
enum class InputStatus {
  kMoreAvailable,     // call poll_next() again soon
  kNothingAvailable,  // nothing now; the reader calls SourceReaderContext::signal_available()
                      // (from any thread) once there is
  kEndOfInput,        // this reader is finished for good
};

// Where a reader emits records. Subtask thread only. collect() runs the chained downstream
// operators synchronously, so its status is theirs: a non-OK status means the record was not
// processed and the subtask is about to fail (a reader may react, e.g. nack the message).
template <typename T>
class SourceOutput {
 public:
  virtual ~SourceOutput() = default;
  // Emits a record with no timestamp of its own (the watermark strategy's timestamp assigner
  // may still give it one).
  [[nodiscard]] virtual absl::Status collect(T value) = 0;
  // Emits a record with an event timestamp (ms since epoch).
  [[nodiscard]] virtual absl::Status collect(T value, std::int64_t timestamp_ms) = 0;
  // Watermarks emitted explicitly by the reader (in addition to the strategy's generator).
  virtual void emit_watermark(std::int64_t watermark_ms) = 0;
  virtual void mark_idle() = 0;
  virtual void mark_active() = 0;
};

// The output handed to poll_next(). Readers with several splits may emit through per-split
// outputs so that each split gets its own watermark generator (FLIP-27 per-split watermarks);
// the emitted watermark is then the minimum over the active splits.
template <typename T>
class ReaderOutput : public SourceOutput<T> {
 public:
  virtual SourceOutput<T>& create_output_for_split(const std::string& split_id) = 0;
  virtual void release_output_for_split(const std::string& split_id) = 0;
};

// Options the runtime hands every reader.
struct SourceReaderOptions {
  // Batches a fetcher may queue ahead of the reader (Flink's
  // source.reader.element.queue.capacity, default 2).
  int element_queue_capacity = 2;
};

// The runtime as a reader sees it. Methods are for the subtask thread unless noted.
class SourceReaderContext {
 public:
  virtual ~SourceReaderContext() = default;
  virtual int subtask_index() const = 0;
  virtual int parallelism() const = 0;
  // Asks the enumerator for a split (SplitEnumerator::handle_split_request). Thread-safe.
  virtual void send_split_request() = 0;
  // Thread-safe.
  virtual void send_source_event_to_coordinator(std::shared_ptr<const SourceEvent> event) = 0;
  // Thread-safe: there may be data now; makes the runtime call poll_next() again after it
  // returned kNothingAvailable. Cheap and coalesced; call it whenever data arrives.
  virtual void signal_available() = 0;
  virtual MetricGroup& metric_group() = 0;
  virtual MailboxExecutor& mailbox_executor() = 0;
  virtual ProcessingTimeService& processing_time_service() = 0;
  virtual const SourceReaderOptions& options() const = 0;
  // The job's checkpoint interval; 0 when checkpointing is off. Sources whose behaviour depends
  // on it (acknowledging on checkpoint completion) check their settings against it.
  virtual std::chrono::milliseconds checkpoint_interval() const {
    return std::chrono::milliseconds(0);
  }
};

// Reads the splits assigned to one subtask. Every method runs on the subtask thread.
// A non-OK status fails the subtask.
template <typename T, typename SplitT>
class SourceReader {
 public:
  virtual ~SourceReader() = default;
  virtual absl::Status start() = 0;
  virtual absl::StatusOr<InputStatus> poll_next(ReaderOutput<T>& output) = 0;
  // The reader's splits, with their progress, as of the last record emitted.
  virtual absl::StatusOr<std::vector<SplitT>> snapshot_state(std::int64_t checkpoint_id) = 0;
  virtual absl::Status add_splits(std::vector<SplitT> splits) = 0;
  virtual absl::Status notify_no_more_splits() = 0;
  virtual absl::Status handle_source_event(std::shared_ptr<const SourceEvent> event) {
    (void)event;
    return absl::OkStatus();
  }
  virtual absl::Status notify_checkpoint_complete(std::int64_t checkpoint_id) {
    (void)checkpoint_id;
    return absl::OkStatus();
  }
  virtual absl::Status notify_checkpoint_aborted(std::int64_t checkpoint_id) {
    (void)checkpoint_id;
    return absl::OkStatus();
  }
  // Watermark alignment: stop reading `to_pause`, continue `to_resume` (split ids). A reader
  // that cannot pause splits returns UNIMPLEMENTED; the job then fails unless
  // allow_unaligned_source_splits is set.
  virtual absl::Status pause_or_resume_splits(const std::vector<std::string>& to_pause,
                                              const std::vector<std::string>& to_resume) {
    (void)to_pause;
    (void)to_resume;
    return absl::UnimplementedError("this source reader cannot pause splits");
  }
  // Called once before the reader is destroyed, on success and on failure alike.
  virtual absl::Status close() = 0;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_SOURCE_READER_H_
