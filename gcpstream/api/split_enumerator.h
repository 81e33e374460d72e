#ifndef GCPSTREAM_API_SPLIT_ENUMERATOR_H_
#define GCPSTREAM_API_SPLIT_ENUMERATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/api/metrics.h"
#include "gcpstream/api/source_event.h"

namespace gcpstream {

// What an enumerator can do. All methods are called on, and must be called from, the
// coordinator thread (the thread that calls the enumerator), except where noted.
template <typename SplitT>
class SplitEnumeratorContext {
 public:
  virtual ~SplitEnumeratorContext() = default;

  // Number of reader subtasks of the source.
  virtual int current_parallelism() const = 0;
  // Subtask indexes of the readers registered so far (a reader registers when it starts and
  // unregisters when it fails).
  virtual std::vector<int> registered_readers() const = 0;
  // Hands splits to a registered reader. Assigning to an unregistered subtask is an error that
  // fails the job.
  virtual void assign_splits(int subtask, std::vector<SplitT> splits) = 0;
  void assign_split(int subtask, SplitT split) {
    std::vector<SplitT> one;
    one.push_back(std::move(split));
    assign_splits(subtask, std::move(one));
  }
  // Tells a reader it will receive no further splits.
  virtual void signal_no_more_splits(int subtask) = 0;
  virtual void send_event_to_source_reader(int subtask,
                                           std::shared_ptr<const SourceEvent> event) = 0;

  // Runs `work` on a worker thread (so blocking calls never stall the coordinator), then
  // `handler` with its result on the coordinator thread. Thread-safe.
  template <typename R>
  void call_async(absl::AnyInvocable<R() &&> work, absl::AnyInvocable<void(R) &&> handler) {
    run_on_worker([this, work = std::move(work), handler = std::move(handler)]() mutable {
      R result = std::move(work)();
      run_in_coordinator_thread(
          [handler = std::move(handler), result = std::move(result)]() mutable {
            std::move(handler)(std::move(result));
          });
    });
  }
  // Thread-safe: runs `fn` on the coordinator thread.
  virtual void run_in_coordinator_thread(absl::AnyInvocable<void() &&> fn) = 0;
  // Thread-safe: runs `fn` on a worker thread of the coordinator's pool.
  virtual void run_on_worker(absl::AnyInvocable<void() &&> fn) = 0;
  // Thread-safe: fails the job with `status` (the enumerator's way to report a fatal
  // condition discovered asynchronously).
  virtual void fail_job(absl::Status status) = 0;

  virtual MetricGroup& metric_group() = 0;
};

// Plans and assigns a source's splits. Lives on the coordinator; one per source.
// Every method is called on the coordinator thread. A non-OK status fails the job.
template <typename SplitT, typename EnumStateT>
class SplitEnumerator {
 public:
  virtual ~SplitEnumerator() = default;
  virtual absl::Status start() = 0;
  // A reader asked for a split (readers that want pull-based assignment call
  // SourceReaderContext::send_split_request()).
  virtual absl::Status handle_split_request(int subtask) {
    (void)subtask;
    return absl::OkStatus();
  }
  // Splits assigned to `subtask` since the last completed checkpoint, returned because that
  // reader failed; they must be assigned again.
  virtual absl::Status add_splits_back(std::vector<SplitT> splits, int subtask) = 0;
  // A reader registered (at start, or again after a restart).
  virtual absl::Status add_reader(int subtask) = 0;
  virtual absl::StatusOr<EnumStateT> snapshot_state(std::int64_t checkpoint_id) = 0;
  virtual absl::Status notify_checkpoint_complete(std::int64_t checkpoint_id) {
    (void)checkpoint_id;
    return absl::OkStatus();
  }
  virtual absl::Status notify_checkpoint_aborted(std::int64_t checkpoint_id) {
    (void)checkpoint_id;
    return absl::OkStatus();
  }
  virtual absl::Status handle_source_event(int subtask, std::shared_ptr<const SourceEvent> event) {
    (void)subtask;
    (void)event;
    return absl::OkStatus();
  }
  virtual absl::Status close() { return absl::OkStatus(); }
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_SPLIT_ENUMERATOR_H_
