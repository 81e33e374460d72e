#include "gcpstream/spanner/changestream/change_stream_ledger.h"

#include <algorithm>

namespace gcpstream::spanner {

using State = ChangeStreamLedgerEntry::State;

ChangeStreamLedger::ChangeStreamLedger(std::vector<ChangeStreamLedgerEntry> entries) {
  for (auto& e : entries) {
    const std::string id = e.split.split_id();
    if (e.state == State::kReady) ready_.push_back(id);
    entries_.emplace(id, std::move(e));
  }
  promote_waiting();
  drop_unneeded_proofs();
}

void ChangeStreamLedger::start_fresh(absl::Time start) {
  entries_.clear();
  ready_.clear();
  ChangeStreamLedgerEntry e;
  e.split.start = start;
  e.split.position = start;
  const std::string id = e.split.split_id();
  entries_.emplace(id, std::move(e));
  ready_.push_back(id);
}

int ChangeStreamLedger::on_children(const std::string& parent_id,
                                    const ChildPartitionsRecord& record) {
  auto reporter = entries_.find(parent_id);
  int added = 0;
  for (const auto& child : record.children) {
    const std::string id = ChangeStreamSplitId(child.token, record.start_timestamp);
    if (entries_.count(id) > 0) continue;
    ChangeStreamLedgerEntry e;
    e.split.token = child.token;
    e.split.start = record.start_timestamp;
    e.split.position = record.start_timestamp;
    e.split.parent_tokens = child.parent_tokens;
    if (e.split.parent_tokens.empty() && reporter != entries_.end()) {
      e.split.parent_tokens.push_back(reporter->second.split.token);
    }
    e.state = State::kWaiting;
    entries_.emplace(id, std::move(e));
    ++added;
  }
  promote_waiting();
  return added;
}

void ChangeStreamLedger::on_progress(const std::string& split_id, absl::Time position) {
  auto it = entries_.find(split_id);
  if (it == entries_.end() || it->second.state == State::kFinished) return;
  if (position > it->second.split.position) it->second.split.position = position;
}

void ChangeStreamLedger::on_finished(const std::string& split_id) {
  auto it = entries_.find(split_id);
  if (it == entries_.end()) return;
  it->second.state = State::kFinished;
  it->second.subtask = -1;
  ready_.erase(std::remove(ready_.begin(), ready_.end(), split_id), ready_.end());
  promote_waiting();
  drop_unneeded_proofs();
}

bool ChangeStreamLedger::finished(const std::string& token) const {
  // Parents are named by token; a token is unique in the ledger.
  for (const auto& [id, e] : entries_) {
    if (e.split.token == token) return e.state == State::kFinished;
  }
  return false;  // not discovered yet: not read yet
}

void ChangeStreamLedger::promote_waiting() {
  for (auto& [id, e] : entries_) {
    if (e.state != State::kWaiting) continue;
    const bool all = std::all_of(e.split.parent_tokens.begin(), e.split.parent_tokens.end(),
                                 [&](const std::string& p) { return finished(p); });
    if (all) {
      e.state = State::kReady;
      ready_.push_back(id);
    }
  }
}

void ChangeStreamLedger::drop_unneeded_proofs() {
  std::set<std::string> needed;
  for (const auto& [id, e] : entries_) {
    if (e.state != State::kWaiting) continue;
    needed.insert(e.split.parent_tokens.begin(), e.split.parent_tokens.end());
  }
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.state == State::kFinished && needed.count(it->second.split.token) == 0) {
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

std::optional<ChangeStreamPartitionSplit> ChangeStreamLedger::take_ready(int subtask) {
  while (!ready_.empty()) {
    const std::string id = ready_.front();
    ready_.pop_front();
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second.state != State::kReady) continue;
    it->second.state = State::kAssigned;
    it->second.subtask = subtask;
    return it->second.split;
  }
  return std::nullopt;
}

void ChangeStreamLedger::reconcile(
    const std::map<std::string, std::pair<int, ChangeStreamPartitionSplit>>& held) {
  for (auto& [id, e] : entries_) {
    auto h = held.find(id);
    if (h != held.end()) {
      if (e.state == State::kReady) {
        ready_.erase(std::remove(ready_.begin(), ready_.end(), id), ready_.end());
      }
      e.state = State::kAssigned;
      e.subtask = h->second.first;
      if (h->second.second.position > e.split.position)
        e.split.position = h->second.second.position;
    } else if (e.state == State::kAssigned) {
      e.state = State::kReady;
      e.subtask = -1;
      ready_.push_back(id);
    }
  }
  // A split a reader holds that the ledger lost track of stays with its reader.
  for (const auto& [id, h] : held) {
    if (entries_.count(id) > 0) continue;
    ChangeStreamLedgerEntry e;
    e.split = h.second;
    e.state = State::kAssigned;
    e.subtask = h.first;
    entries_.emplace(id, std::move(e));
  }
}

void ChangeStreamLedger::return_assigned(const std::vector<std::string>& split_ids) {
  for (const auto& id : split_ids) {
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second.state != State::kAssigned) continue;
    it->second.state = State::kReady;
    it->second.subtask = -1;
    ready_.push_back(id);
  }
}

std::optional<absl::Time> ChangeStreamLedger::low_watermark() const {
  std::optional<absl::Time> low;
  for (const auto& [id, e] : entries_) {
    if (e.state == State::kFinished) continue;
    if (!low || e.split.position < *low) low = e.split.position;
  }
  return low;
}

std::optional<absl::Time> ChangeStreamLedger::oldest_ready() const {
  std::optional<absl::Time> low;
  for (const auto& [id, e] : entries_) {
    if (e.state != State::kReady && e.state != State::kWaiting) continue;
    if (!low || e.split.position < *low) low = e.split.position;
  }
  return low;
}

std::optional<absl::Time> ChangeStreamLedger::oldest_assigned() const {
  std::optional<absl::Time> low;
  for (const auto& [id, e] : entries_) {
    if (e.state != State::kAssigned) continue;
    if (!low || e.split.position < *low) low = e.split.position;
  }
  return low;
}

std::size_t ChangeStreamLedger::unfinished() const {
  return entries_.size() - count(State::kFinished);
}

std::size_t ChangeStreamLedger::count(State state) const {
  return static_cast<std::size_t>(std::count_if(
      entries_.begin(), entries_.end(), [&](const auto& kv) { return kv.second.state == state; }));
}

std::vector<ChangeStreamLedgerEntry> ChangeStreamLedger::entries() const {
  std::vector<ChangeStreamLedgerEntry> out;
  out.reserve(entries_.size());
  for (const auto& [id, e] : entries_) out.push_back(e);
  return out;
}

bool ChangeStreamLedger::holds(const std::string& split_id) const {
  auto it = entries_.find(split_id);
  return it != entries_.end() && it->second.state != State::kFinished;
}

}  // namespace gcpstream::spanner
