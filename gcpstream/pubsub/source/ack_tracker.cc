#include "gcpstream/pubsub/source/ack_tracker.h"

namespace gcpstream::pubsub {

void AckTracker::add_pending(const std::string& split, std::string ack_id) {
  std::lock_guard lock(mu_);
  if (splits_[split].pending.insert(std::move(ack_id)).second) ++outstanding_;
}

bool AckTracker::mark_emitted(const std::string& split, const std::string& ack_id) {
  std::lock_guard lock(mu_);
  auto it = splits_.find(split);
  if (it == splits_.end()) return false;
  auto p = it->second.pending.find(ack_id);
  if (p == it->second.pending.end()) return false;
  auto node = it->second.pending.extract(p);
  it->second.staged.push_back(std::move(node.value()));
  return true;
}

void AckTracker::drop(const std::string& split, const std::string& ack_id) {
  std::lock_guard lock(mu_);
  auto it = splits_.find(split);
  if (it != splits_.end() && it->second.pending.erase(ack_id) > 0) --outstanding_;
}

void AckTracker::bind(std::int64_t checkpoint_id) {
  std::lock_guard lock(mu_);
  for (auto& [id, acks] : splits_) {
    if (acks.staged.empty()) continue;
    auto& slot = acks.bound[checkpoint_id];
    if (slot.empty()) {
      slot = std::move(acks.staged);
    } else {
      slot.insert(slot.end(), acks.staged.begin(), acks.staged.end());
    }
    acks.staged.clear();
  }
}

std::map<std::string, std::vector<std::string>> AckTracker::take_completed(
    std::int64_t checkpoint_id) {
  std::map<std::string, std::vector<std::string>> out;
  std::lock_guard lock(mu_);
  for (auto& [id, acks] : splits_) {
    auto end = acks.bound.upper_bound(checkpoint_id);
    if (acks.bound.begin() == end) continue;
    auto& ids = out[id];
    for (auto it = acks.bound.begin(); it != end; ++it) {
      ids.insert(ids.end(), std::make_move_iterator(it->second.begin()),
                 std::make_move_iterator(it->second.end()));
    }
    acks.bound.erase(acks.bound.begin(), end);
    outstanding_ -= static_cast<std::int64_t>(ids.size());
  }
  return out;
}

std::vector<std::string> AckTracker::take_all(const std::string& split) {
  std::vector<std::string> ids;
  std::lock_guard lock(mu_);
  auto it = splits_.find(split);
  if (it == splits_.end()) return ids;
  auto& acks = it->second;
  ids.reserve(acks.pending.size() + acks.staged.size());
  ids.insert(ids.end(), acks.pending.begin(), acks.pending.end());
  ids.insert(ids.end(), std::make_move_iterator(acks.staged.begin()),
             std::make_move_iterator(acks.staged.end()));
  for (auto& [n, bound] : acks.bound) {
    ids.insert(ids.end(), std::make_move_iterator(bound.begin()),
               std::make_move_iterator(bound.end()));
  }
  splits_.erase(it);
  outstanding_ -= static_cast<std::int64_t>(ids.size());
  return ids;
}

std::int64_t AckTracker::outstanding() const {
  std::lock_guard lock(mu_);
  return outstanding_;
}

}  // namespace gcpstream::pubsub
