#include "gcpstream/bigtable/changestream/change_stream_ledger.h"

#include <fmt/format.h>

#include <algorithm>

namespace gcpstream::bigtable {

ChangeStreamLedger::ChangeStreamLedger(BigtableChangeStreamEnumState state)
    : next_id_(state.next_id) {
  for (auto& e : state.entries) {
    const std::string id = e.split.id;
    if (e.subtask < 0) ready_.push_back(id);
    entries_[id] = Entry{std::move(e.split), e.subtask};
  }
  for (auto& p : state.pending) {
    const RowKeyRange range = p.partition;
    pending_[range] = Pending{std::move(p), {}};
  }
}

std::string ChangeStreamLedger::new_id(const RowKeyRange& range) {
  return fmt::format("{}#{}", FormatRowRange(range), next_id_++);
}

void ChangeStreamLedger::start_fresh(const std::vector<RowKeyRange>& partitions, absl::Time start) {
  entries_.clear();
  ready_.clear();
  pending_.clear();
  for (const auto& range : partitions) {
    BigtableChangeStreamSplit split;
    split.id = new_id(range);
    split.partition = range;
    split.start_time = start;
    split.low_watermark = start;
    const std::string id = split.id;  // (the right side of = is evaluated first)
    ready_.push_back(id);
    entries_[id] = Entry{std::move(split), -1};
  }
}

void ChangeStreamLedger::on_progress(const std::string& split_id,
                                     std::vector<PartitionToken> tokens, absl::Time low_watermark) {
  auto it = entries_.find(split_id);
  if (it == entries_.end() || tokens.empty()) return;
  it->second.split.tokens = std::move(tokens);
  it->second.split.low_watermark = std::max(it->second.split.low_watermark, low_watermark);
}

absl::StatusOr<ChangeStreamLedger::Released> ChangeStreamLedger::on_close(
    const std::string& split_id, const PartitionClose& close) {
  Released released;
  auto it = entries_.find(split_id);
  if (it == entries_.end()) return released;
  // Every token must belong to one of the new partitions before anything changes.
  std::vector<std::pair<PartitionToken, RowKeyRange>> placed;
  for (const auto& token : close.tokens) {
    auto home = std::find_if(close.new_partitions.begin(), close.new_partitions.end(),
                             [&](const RowKeyRange& p) { return RangeContains(p, token.range); });
    if (home == close.new_partitions.end()) {
      return absl::InternalError(fmt::format(
          "ReadChangeStream: partition {} closed with a token for {} that lies in none of its "
          "new partitions",
          FormatRowRange(it->second.split.partition), FormatRowRange(token.range)));
    }
    placed.emplace_back(token, *home);
  }
  const absl::Time low = std::max(close.low_watermark, it->second.split.low_watermark);
  ready_.erase(std::remove(ready_.begin(), ready_.end(), split_id), ready_.end());
  entries_.erase(it);
  std::set<RowKeyRange> touched;
  for (auto& [token, home] : placed) {
    auto [p, fresh] = pending_.try_emplace(home);
    Pending& pending = p->second;
    if (fresh) {
      pending.partition.partition = home;
      pending.partition.low_watermark = low;
    }
    // A piece already handed over (a parent's close replayed after a restore) stays as it was.
    const bool overlaps = std::any_of(
        pending.partition.tokens.begin(), pending.partition.tokens.end(), [&](const auto& t) {
          const bool before = !t.range.end.empty() && t.range.end <= token.range.start;
          const bool after = !token.range.end.empty() && token.range.end <= t.range.start;
          return !before && !after;
        });
    if (overlaps) continue;
    pending.partition.tokens.push_back(token);
    pending.partition.low_watermark = std::min(pending.partition.low_watermark, low);
    pending.parents.insert(split_id);
    touched.insert(home);
  }
  for (const auto& range : touched) {
    auto p = pending_.find(range);
    if (!TokensCover(p->second.partition.tokens, range)) continue;
    BigtableChangeStreamSplit split;
    split.id = new_id(range);
    split.partition = range;
    split.tokens = std::move(p->second.partition.tokens);
    std::sort(split.tokens.begin(), split.tokens.end(),
              [](const auto& a, const auto& b) { return a.range.start < b.range.start; });
    split.low_watermark = p->second.partition.low_watermark;
    split.start_time = split.low_watermark;
    // A restored pending entry has lost its parents' names; count it as a split then.
    if (p->second.parents.size() > 1) {
      ++released.merges;
    } else {
      ++released.splits;
    }
    pending_.erase(p);
    const std::string id = split.id;  // (the right side of = is evaluated first)
    ready_.push_back(id);
    entries_[id] = Entry{std::move(split), -1};
  }
  return released;
}

std::optional<BigtableChangeStreamSplit> ChangeStreamLedger::take_ready(int subtask) {
  if (ready_.empty()) return std::nullopt;
  Entry& e = entries_.at(ready_.front());
  ready_.pop_front();
  e.subtask = subtask;
  return e.split;
}

void ChangeStreamLedger::return_assigned(const std::vector<std::string>& split_ids) {
  for (auto id = split_ids.rbegin(); id != split_ids.rend(); ++id) {
    auto it = entries_.find(*id);
    if (it == entries_.end() || it->second.subtask < 0) continue;
    it->second.subtask = -1;
    ready_.push_front(*id);
  }
}

std::set<std::string> ChangeStreamLedger::reconcile(
    const std::map<std::string, std::pair<int, BigtableChangeStreamSplit>>& held) {
  std::set<std::string> unknown;
  for (const auto& [id, h] : held) {
    auto it = entries_.find(id);
    if (it == entries_.end()) {
      unknown.insert(id);
      continue;
    }
    if (it->second.subtask < 0) {
      ready_.erase(std::remove(ready_.begin(), ready_.end(), id), ready_.end());
    }
    it->second.subtask = h.first;
    it->second.split = h.second;
    it->second.split.closed = false;
  }
  for (auto& [id, e] : entries_) {
    if (e.subtask >= 0 && held.count(id) == 0) {
      e.subtask = -1;
      ready_.push_back(id);
    }
  }
  return unknown;
}

std::optional<absl::Time> ChangeStreamLedger::oldest_ready() const {
  std::optional<absl::Time> oldest;
  for (const auto& id : ready_) {
    const absl::Time t = entries_.at(id).split.low_watermark;
    if (!oldest || t < *oldest) oldest = t;
  }
  return oldest;
}

int ChangeStreamLedger::held_by(int subtask) const {
  int n = 0;
  for (const auto& [id, e] : entries_) n += e.subtask == subtask ? 1 : 0;
  return n;
}

BigtableChangeStreamEnumState ChangeStreamLedger::state(bool started) const {
  BigtableChangeStreamEnumState s;
  s.started = started;
  s.next_id = next_id_;
  // Ready partitions in their queue order, so a restore hands them out in the same order.
  for (const auto& id : ready_) s.entries.push_back({entries_.at(id).split, -1});
  for (const auto& [id, e] : entries_) {
    if (e.subtask >= 0) s.entries.push_back({e.split, e.subtask});
  }
  for (const auto& [range, p] : pending_) s.pending.push_back(p.partition);
  return s;
}

}  // namespace gcpstream::bigtable
