#include "gcpstream/pubsub/source/pubsub_split_enumerator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "gcpstream/pubsub/source/startup_check.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::pubsub {

PubSubSplitEnumerator::PubSubSplitEnumerator(std::shared_ptr<const PubSubSourceConfig> config,
                                             SplitEnumeratorContext<PubSubSplit>& context,
                                             PubSubEnumeratorState state)
    : config_(std::move(config)), context_(context), state_(state) {}

PubSubSplitEnumerator::~PubSubSplitEnumerator() { *alive_ = false; }

absl::Status PubSubSplitEnumerator::start() {
  std::weak_ptr<bool> alive = alive_;
  auto config = config_;
  const bool seek_done = state_.seek_done;
  context_.call_async<absl::StatusOr<StartupCheckResult>>(
      [config, seek_done]() -> absl::StatusOr<StartupCheckResult> {
        auto admin = config->make_admin();
        if (!admin.ok()) return admin.status();
        const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
        return RunStartupCheck(**admin, *config, seek_done, now_ms);
      },
      [this, alive](absl::StatusOr<StartupCheckResult> result) {
        auto token = alive.lock();
        if (!token || !*token) return;  // the enumerator closed meanwhile
        if (!result.ok()) {
          context_.fail_job(absl::Status(
              result.status().code(),
              fmt::format("Pub/Sub source startup check failed: {}", result.status().message())));
          return;
        }
        if (result->seeked) state_.seek_done = true;
        ready_ = true;
        for (int subtask : waiting_) assign(subtask);
        waiting_.clear();
      });
  return absl::OkStatus();
}

void PubSubSplitEnumerator::assign(int subtask) {
  const int parallelism = context_.current_parallelism();
  std::vector<connector::SubscriptionDestination> subs;
  for (const auto& spec : config_->subscriptions) subs.push_back(spec.subscription);
  std::vector<PubSubSplit> mine;
  for (auto& split : PlanSplits(subs, config_->ordering_mode, parallelism)) {
    if (SplitOwner(split, parallelism) == subtask) mine.push_back(std::move(split));
  }
  if (mine.empty()) {
    // PER_KEY with more subtasks than subscriptions: this one has nothing to read.
    context_.signal_no_more_splits(subtask);
    return;
  }
  context_.assign_splits(subtask, std::move(mine));
}

absl::Status PubSubSplitEnumerator::add_splits_back(std::vector<PubSubSplit> splits, int subtask) {
  // Nothing to remember: the plan is deterministic, so the restarted reader is handed the same
  // splits again when it registers (add_reader).
  (void)splits;
  (void)subtask;
  return absl::OkStatus();
}

absl::Status PubSubSplitEnumerator::add_reader(int subtask) {
  if (ready_) {
    assign(subtask);
  } else {
    waiting_.insert(subtask);
  }
  return absl::OkStatus();
}

absl::StatusOr<PubSubEnumeratorState> PubSubSplitEnumerator::snapshot_state(std::int64_t) {
  return state_;
}

absl::Status PubSubSplitEnumerator::handle_source_event(int subtask,
                                                        std::shared_ptr<const SourceEvent> event) {
  if (auto* overflow = dynamic_cast<const SubscriberBufferOverflow*>(event.get())) {
    return absl::ResourceExhaustedError(
        fmt::format("Pub/Sub source reader {}: {}", subtask, overflow->message));
  }
  return absl::OkStatus();
}

}  // namespace gcpstream::pubsub
