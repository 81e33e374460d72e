#ifndef GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SPLIT_ENUMERATOR_H_
#define GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SPLIT_ENUMERATOR_H_

#include <memory>
#include <set>
#include <string>

#include "gcpstream/api/split_enumerator.h"
#include "gcpstream/pubsub/source/pubsub_source_config.h"
#include "gcpstream/pubsub/source/pubsub_split.h"

namespace gcpstream::pubsub {

// Sent by a reader whose delivery crossed the reader-wide subscriber-buffer budget while it was
// consuming (not every split paused): the enumerator fails the job with `message`. Sent from
// the subscriber's callback thread, so it reaches the job even when backpressure has stopped
// the reader's own loops.
struct SubscriberBufferOverflow final : SourceEvent {
  std::string message;
  explicit SubscriberBufferOverflow(std::string m) : message(std::move(m)) {}
};

// Runs the startup check asynchronously (readers registering meanwhile wait: no subscriber
// attaches to a subscription mid-seek), then hands every reader the splits the plan gives it.
// A reader that registers again (after a restart) is handed the same splits again; a subtask
// the plan gives nothing is told there are no more splits. Coordinator thread only.
class PubSubSplitEnumerator final : public SplitEnumerator<PubSubSplit, PubSubEnumeratorState> {
 public:
  PubSubSplitEnumerator(std::shared_ptr<const PubSubSourceConfig> config,
                        SplitEnumeratorContext<PubSubSplit>& context, PubSubEnumeratorState state);
  ~PubSubSplitEnumerator() override;

  absl::Status start() override;
  absl::Status add_splits_back(std::vector<PubSubSplit> splits, int subtask) override;
  absl::Status add_reader(int subtask) override;
  absl::StatusOr<PubSubEnumeratorState> snapshot_state(std::int64_t checkpoint_id) override;
  absl::Status handle_source_event(int subtask, std::shared_ptr<const SourceEvent> event) override;

  bool ready() const { return ready_; }

 private:
  void assign(int subtask);

  std::shared_ptr<const PubSubSourceConfig> config_;
  SplitEnumeratorContext<PubSubSplit>& context_;
  PubSubEnumeratorState state_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  bool ready_ = false;
  std::set<int> waiting_;  // registered before the check finished
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SPLIT_ENUMERATOR_H_
