#ifndef GCPSTREAM_API_PULL_SPLIT_ASSIGNER_H_
#define GCPSTREAM_API_PULL_SPLIT_ASSIGNER_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "gcpstream/api/split_enumerator.h"

namespace gcpstream {

// The assignment half of a bounded, pull-based enumerator: a queue of planned splits handed out
// one per split request, in order, and "no more splits" once it is empty. It keeps no record of
// who holds what: a failed reader's splits come back through add_back() and go out first again.
// Requests that arrive before the plan are held until set_planned().
//
// Registers on the enumerator's metric group: splitsAssigned and splitsReturned (counters) and
// unassignedSplits (gauge). Used on the coordinator thread only, like the enumerator.
template <typename SplitT>
class PullSplitAssigner {
 public:
  explicit PullSplitAssigner(SplitEnumeratorContext<SplitT>& context)
      : context_(context),
        assigned_(context.metric_group().counter("splitsAssigned")),
        returned_(context.metric_group().counter("splitsReturned")),
        unassigned_count_(std::make_shared<std::atomic<std::int64_t>>(0)) {
    context.metric_group().gauge("unassignedSplits",
                                 [count = unassigned_count_] { return count->load(); });
  }

  // The plan is known: these are the splits not yet handed out. Serves the held requests.
  void set_planned(std::vector<SplitT> splits) {
    queue_.assign(std::make_move_iterator(splits.begin()), std::make_move_iterator(splits.end()));
    planned_ = true;
    publish();
    std::set<int> waiting;
    waiting.swap(waiting_);
    // A subtask that failed while its request waited is gone; it asks again when it restarts.
    const std::vector<int> registered = context_.registered_readers();
    for (int subtask : waiting) {
      if (std::find(registered.begin(), registered.end(), subtask) != registered.end()) {
        serve(subtask);
      }
    }
  }
  bool planned() const { return planned_; }

  void handle_split_request(int subtask) {
    if (!planned_) {
      waiting_.insert(subtask);
      return;
    }
    serve(subtask);
  }

  // A failed reader's splits: they go out again before the rest.
  void add_back(std::vector<SplitT> splits) {
    returned_.inc(static_cast<std::int64_t>(splits.size()));
    for (auto it = splits.rbegin(); it != splits.rend(); ++it) queue_.push_front(std::move(*it));
    publish();
  }

  std::vector<SplitT> unassigned() const { return {queue_.begin(), queue_.end()}; }

 private:
  void serve(int subtask) {
    if (queue_.empty()) {
      context_.signal_no_more_splits(subtask);
      return;
    }
    SplitT split = std::move(queue_.front());
    queue_.pop_front();
    publish();
    assigned_.inc();
    context_.assign_split(subtask, std::move(split));
  }
  void publish() { unassigned_count_->store(static_cast<std::int64_t>(queue_.size())); }

  SplitEnumeratorContext<SplitT>& context_;
  Counter& assigned_;
  Counter& returned_;
  std::shared_ptr<std::atomic<std::int64_t>> unassigned_count_;
  std::deque<SplitT> queue_;
  std::set<int> waiting_;
  bool planned_ = false;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_PULL_SPLIT_ASSIGNER_H_
