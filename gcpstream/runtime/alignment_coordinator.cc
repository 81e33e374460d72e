#include "gcpstream/runtime/alignment_coordinator.h"

#include <algorithm>

#include "gcpstream/api/record.h"
#include "gcpstream/runtime/job_status.h"

namespace gcpstream::runtime {

AlignmentCoordinator::~AlignmentCoordinator() {
  *alive_ = false;
  for (auto& [name, group] : groups_) {
    if (group.timer) group.timer->cancel();
  }
}

void AlignmentCoordinator::register_reader(const std::string& group_name,
                                           std::chrono::milliseconds max_drift,
                                           std::chrono::milliseconds update_interval,
                                           const std::string& reader_id, Announce announce) {
  auto [it, inserted] = groups_.try_emplace(group_name);
  Group& group = it->second;
  if (inserted) {
    group.max_drift = max_drift;
    group.update_interval = update_interval;
    group.max_allowed = kMaxWatermark;
  } else {
    group.max_drift = std::min(group.max_drift, max_drift);
    group.update_interval = std::min(group.update_interval, update_interval);
  }
  // Until a reader reports, it holds the group at the lowest watermark.
  group.watermarks[reader_id] = kMinWatermark;
  group.readers[reader_id] = std::move(announce);
  if (inserted) schedule(group_name);
}

void AlignmentCoordinator::unregister_reader(const std::string& group_name,
                                             const std::string& reader_id) {
  auto it = groups_.find(group_name);
  if (it == groups_.end()) return;
  it->second.watermarks.erase(reader_id);
  it->second.readers.erase(reader_id);
}

void AlignmentCoordinator::report(const std::string& group_name, const std::string& reader_id,
                                  std::int64_t watermark_ms) {
  auto it = groups_.find(group_name);
  if (it == groups_.end()) return;
  auto w = it->second.watermarks.find(reader_id);
  if (w != it->second.watermarks.end()) w->second = watermark_ms;
}

std::int64_t AlignmentCoordinator::max_allowed(const std::string& group_name) const {
  auto it = groups_.find(group_name);
  return it == groups_.end() ? kMaxWatermark : it->second.max_allowed;
}

void AlignmentCoordinator::schedule(const std::string& group_name) {
  Group& group = groups_.at(group_name);
  std::weak_ptr<bool> alive = alive_;
  CoordinatorExecutor* executor = executor_;
  group.timer = timers_->schedule(std::chrono::steady_clock::now() + group.update_interval,
                                  [this, alive, executor, group_name] {
                                    executor->execute([this, alive, group_name] {
                                      auto a = alive.lock();
                                      if (!a || !*a) return;
                                      update(group_name);
                                      schedule(group_name);
                                    });
                                  });
}

void AlignmentCoordinator::update(const std::string& group_name) {
  Group& group = groups_.at(group_name);
  std::int64_t min = kMaxWatermark;
  for (const auto& [id, wm] : group.watermarks) min = std::min(min, wm);
  std::int64_t max_allowed = kMaxWatermark;
  if (min != kMaxWatermark) {
    const std::int64_t drift = group.max_drift.count();
    max_allowed = (min > kMaxWatermark - drift) ? kMaxWatermark : min + drift;
  }
  group.max_allowed = max_allowed;
  for (auto& [id, announce] : group.readers) announce(max_allowed);
  if (status_ != nullptr) {
    AlignmentGroupStatus observed;
    observed.group = group_name;
    observed.max_drift_ms = group.max_drift.count();
    observed.max_allowed_watermark = max_allowed;
    observed.reader_watermarks = group.watermarks;
    observed.updated_ms = WallNowMs();
    status_->update_alignment(std::move(observed));
  }
}

}  // namespace gcpstream::runtime
