#ifndef GCPSTREAM_RUNTIME_ALIGNMENT_COORDINATOR_H_
#define GCPSTREAM_RUNTIME_ALIGNMENT_COORDINATOR_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "gcpstream/runtime/coordinator_executor.h"
#include "gcpstream/runtime/timer_service.h"

namespace gcpstream::runtime {

class JobStatusTracker;

// Watermark alignment across the readers of every source in a group. Readers report their
// current watermark; every update interval the coordinator computes the group minimum over
// readers that are neither idle nor finished (they report kMaxWatermark) and announces
// max_allowed = minimum + max_drift to every reader of the group. A reader then pauses the
// splits (or, with allow_unaligned_source_splits, its whole subtask) ahead of max_allowed.
// All methods run on the coordinator thread.
class AlignmentCoordinator {
 public:
  using Announce = std::function<void(std::int64_t max_allowed_watermark)>;

  // `status` (may be null) is told every group's state at each update.
  AlignmentCoordinator(CoordinatorExecutor* executor, TimerThread* timers,
                       JobStatusTracker* status = nullptr)
      : executor_(executor), timers_(timers), status_(status) {}
  ~AlignmentCoordinator();

  // Registers a reader of a group; `announce` posts to the reader's mailbox (thread-safe).
  void register_reader(const std::string& group, std::chrono::milliseconds max_drift,
                       std::chrono::milliseconds update_interval, const std::string& reader_id,
                       Announce announce);
  void unregister_reader(const std::string& group, const std::string& reader_id);
  void report(const std::string& group, const std::string& reader_id, std::int64_t watermark_ms);

  // The group's current max allowed watermark (for tests).
  std::int64_t max_allowed(const std::string& group) const;

 private:
  struct Group {
    std::chrono::milliseconds max_drift{0};
    std::chrono::milliseconds update_interval{1000};
    std::map<std::string, std::int64_t> watermarks;
    std::map<std::string, Announce> readers;
    std::int64_t max_allowed;
    std::shared_ptr<util::TimerHandle> timer;
  };
  void schedule(const std::string& group);
  void update(const std::string& group);

  CoordinatorExecutor* executor_;
  TimerThread* timers_;
  JobStatusTracker* status_;
  std::map<std::string, Group> groups_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_ALIGNMENT_COORDINATOR_H_
