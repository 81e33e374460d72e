#ifndef GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SPLIT_H_
#define GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SPLIT_H_

#include <string>
#include <vector>

#include "gcpstream/api/versioned_serializer.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/pubsub/source/pubsub_source_config.h"

namespace gcpstream::pubsub {

// One streaming-pull subscriber on one subscription. Carries no progress: Pub/Sub keeps
// delivery state on the server, so readers checkpoint no splits and the plan is recomputed on
// every start and restore.
struct PubSubSplit {
  int index = 0;               // 0 .. split_count-1
  int subscription_index = 0;  // into the configured subscriptions
  connector::SubscriptionDestination subscription;

  std::string split_id() const;
  friend bool operator==(const PubSubSplit&, const PubSubSplit&) = default;
};

// The split plan, a pure function of the subscriptions, the ordering mode and the parallelism:
//   split_count = PER_KEY ? |subscriptions| : max(|subscriptions|, parallelism)
//   split i -> subscription[i % |subscriptions|],  owner(i) = i % parallelism
// Every subscription is read by someone, and under NONE no subtask is left without a split.
std::vector<PubSubSplit> PlanSplits(const std::vector<connector::SubscriptionDestination>& subs,
                                    OrderingMode mode, int parallelism);
inline int SplitOwner(const PubSubSplit& split, int parallelism) {
  return split.index % parallelism;
}

// What the enumerator checkpoints: whether the start position's seek already ran (a restore
// must not seek again).
struct PubSubEnumeratorState {
  bool seek_done = false;
};

class PubSubSplitSerializer final : public VersionedSerializer<PubSubSplit> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const PubSubSplit& split) const override;
  absl::StatusOr<PubSubSplit> deserialize(int version, std::string_view bytes) const override;
};

class PubSubEnumeratorStateSerializer final : public VersionedSerializer<PubSubEnumeratorState> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const PubSubEnumeratorState& state) const override;
  absl::StatusOr<PubSubEnumeratorState> deserialize(int version,
                                                    std::string_view bytes) const override;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SPLIT_H_
