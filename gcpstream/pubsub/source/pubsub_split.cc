#include "gcpstream/pubsub/source/pubsub_split.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace gcpstream::pubsub {

std::string PubSubSplit::split_id() const {
  return fmt::format("{}#{}", subscription.resource_name(), index);
}

std::vector<PubSubSplit> PlanSplits(const std::vector<connector::SubscriptionDestination>& subs,
                                    OrderingMode mode, int parallelism) {
  std::vector<PubSubSplit> splits;
  if (subs.empty() || parallelism < 1) return splits;
  const int n = static_cast<int>(subs.size());
  const int count = mode == OrderingMode::kPerKey ? n : std::max(n, parallelism);
  splits.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) splits.push_back(PubSubSplit{i, i % n, subs[i % n]});
  return splits;
}

absl::StatusOr<std::string> PubSubSplitSerializer::serialize(const PubSubSplit& split) const {
  nlohmann::json j{{"index", split.index},
                   {"subscription_index", split.subscription_index},
                   {"project", split.subscription.project},
                   {"subscription", split.subscription.subscription}};
  return j.dump();
}

absl::StatusOr<PubSubSplit> PubSubSplitSerializer::deserialize(int version,
                                                               std::string_view bytes) const {
  if (version != 1) {
    return absl::FailedPreconditionError(
        fmt::format("Pub/Sub split: unknown serialized version {} (this build reads 1)", version));
  }
  auto j = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::DataLossError("Pub/Sub split: corrupt serialized split");
  }
  PubSubSplit split;
  split.index = j.value("index", 0);
  split.subscription_index = j.value("subscription_index", 0);
  split.subscription.project = j.value("project", "");
  split.subscription.subscription = j.value("subscription", "");
  return split;
}

absl::StatusOr<std::string> PubSubEnumeratorStateSerializer::serialize(
    const PubSubEnumeratorState& state) const {
  return std::string(state.seek_done ? "seek_done=1" : "seek_done=0");
}

absl::StatusOr<PubSubEnumeratorState> PubSubEnumeratorStateSerializer::deserialize(
    int version, std::string_view bytes) const {
  if (version != 1) {
    return absl::FailedPreconditionError(fmt::format(
        "Pub/Sub enumerator state: unknown serialized version {} (this build reads 1)", version));
  }
  if (bytes == "seek_done=1") return PubSubEnumeratorState{true};
  if (bytes == "seek_done=0") return PubSubEnumeratorState{false};
  return absl::DataLossError("Pub/Sub enumerator state: corrupt serialized state");
}

}  // namespace gcpstream::pubsub
