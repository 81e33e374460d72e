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
  pool_ = std::move(state.tokens);
  successors_ = std::move(state.successors);
}

std::string ChangeStreamLedger::new_id(const RowKeyRange& range) {
  return fmt::format("{}#{}", FormatRowRange(range), next_id_++);
}

void ChangeStreamLedger::add_ready(const RowKeyRange& range, absl::Time start) {
  BigtableChangeStreamSplit split;
  split.id = new_id(range);
  split.partition = range;
  split.start_time = start;
  split.low_watermark = start;
  const std::string id = split.id;  // (the right side of = is evaluated first)
  ready_.push_back(id);
  entries_[id] = Entry{std::move(split), -1};
}

void ChangeStreamLedger::start_fresh(const std::vector<RowKeyRange>& partitions, absl::Time start) {
  entries_.clear();
  ready_.clear();
  pool_.clear();
  successors_.clear();
  for (const auto& range : partitions) add_ready(range, start);
}

namespace {
absl::Time PositionOf(const BigtableChangeStreamSplit& s) {
  return s.tokens.empty() ? s.start_time : s.low_watermark;
}
}  // namespace

std::optional<std::pair<RowKeyRange, absl::Time>> ChangeStreamLedger::oldest_position() const {
  std::optional<std::pair<RowKeyRange, absl::Time>> oldest;
  auto consider = [&](const RowKeyRange& r, absl::Time t) {
    if (!oldest || t < oldest->second) oldest = std::make_pair(r, t);
  };
  for (const auto& [id, e] : entries_) consider(e.split.partition, PositionOf(e.split));
  for (const auto& t : pool_) consider(t.token.range, t.low_watermark);
  return oldest;
}

std::set<std::string> ChangeStreamLedger::restart_expired(absl::Time cutoff,
                                                          absl::Time restart_at) {
  std::set<std::string> replaced;
  std::vector<RowKeyRange> restart;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (PositionOf(it->second.split) >= cutoff) {
      ++it;
      continue;
    }
    replaced.insert(it->first);
    restart.push_back(it->second.split.partition);
    ready_.erase(std::remove(ready_.begin(), ready_.end(), it->first), ready_.end());
    it = entries_.erase(it);
  }
  for (auto it = pool_.begin(); it != pool_.end();) {
    if (it->low_watermark >= cutoff) {
      ++it;
      continue;
    }
    restart.push_back(it->token.range);
    it = pool_.erase(it);
  }
  for (const auto& range : restart) add_ready(range, restart_at);
  Released ignored;
  release(ignored);  // drops successors no token waits for any more
  return replaced;
}

void ChangeStreamLedger::on_progress(const std::string& split_id,
                                     std::vector<PartitionToken> tokens, absl::Time low_watermark) {
  auto it = entries_.find(split_id);
  if (it == entries_.end() || tokens.empty()) return;
  it->second.split.tokens = std::move(tokens);
  it->second.split.low_watermark = std::max(it->second.split.low_watermark, low_watermark);
}

namespace {

bool Overlap(const RowKeyRange& a, const RowKeyRange& b) {
  const bool a_before_b = !a.end.empty() && a.end <= b.start;
  const bool b_before_a = !b.end.empty() && b.end <= a.start;
  return !a_before_b && !b_before_a;
}

}  // namespace

absl::StatusOr<ChangeStreamLedger::Released> ChangeStreamLedger::on_close(
    const std::string& split_id, const PartitionClose& close) {
  Released released;
  auto it = entries_.find(split_id);
  if (it == entries_.end()) return released;
  const RowKeyRange closed = it->second.split.partition;
  if (close.tokens.empty() != close.new_partitions.empty()) {
    return absl::InternalError(
        fmt::format("ReadChangeStream: partition {} closed with {} tokens and {} new partitions",
                    FormatRowRange(closed), close.tokens.size(), close.new_partitions.size()));
  }
  if (!close.tokens.empty() && !TokensCover(close.tokens, closed)) {
    return absl::InternalError(fmt::format(
        "ReadChangeStream: partition {} closed with tokens that do not cover its range exactly; "
        "the rest of its changes would be lost",
        FormatRowRange(closed)));
  }
  for (const auto& token : close.tokens) {
    const bool placed =
        std::any_of(close.new_partitions.begin(), close.new_partitions.end(),
                    [&](const RowKeyRange& p) { return RangeContains(p, token.range); });
    if (!placed) {
      return absl::InternalError(fmt::format(
          "ReadChangeStream: partition {} closed with a token for {} that lies in none of its "
          "new partitions",
          FormatRowRange(closed), FormatRowRange(token.range)));
    }
  }
  const absl::Time low = std::max(close.low_watermark, it->second.split.low_watermark);
  ready_.erase(std::remove(ready_.begin(), ready_.end(), split_id), ready_.end());
  entries_.erase(it);
  for (const auto& token : close.tokens) {
    // A piece already handed over (a parent's close replayed after a restore) stays as it was.
    const bool known = std::any_of(pool_.begin(), pool_.end(), [&](const HandedOverToken& t) {
      return Overlap(t.token.range, token.range);
    });
    if (!known) pool_.push_back(HandedOverToken{token, low, split_id});
  }
  for (const auto& p : close.new_partitions) {
    successors_.erase(std::remove(successors_.begin(), successors_.end(), p), successors_.end());
    successors_.push_back(p);
  }
  release(released);
  return released;
}

void ChangeStreamLedger::release(Released& released) {
  // Newest first: the latest topology needs no further hand-over.
  for (std::size_t i = successors_.size(); i-- > 0;) {
    const RowKeyRange range = successors_[i];
    std::vector<PartitionToken> tokens;
    std::set<std::string> parents;
    absl::Time low = absl::InfiniteFuture();
    for (const auto& t : pool_) {
      if (!RangeContains(range, t.token.range)) continue;
      tokens.push_back(t.token);
      parents.insert(t.parent);
      low = std::min(low, t.low_watermark);
    }
    if (!TokensCover(tokens, range)) continue;
    pool_.erase(std::remove_if(
                    pool_.begin(), pool_.end(),
                    [&](const HandedOverToken& t) { return RangeContains(range, t.token.range); }),
                pool_.end());
    BigtableChangeStreamSplit split;
    split.id = new_id(range);
    split.partition = range;
    split.tokens = std::move(tokens);
    std::sort(split.tokens.begin(), split.tokens.end(),
              [](const auto& a, const auto& b) { return a.range.start < b.range.start; });
    split.low_watermark = low;
    split.start_time = low;
    if (parents.size() > 1) {
      ++released.merges;
    } else {
      ++released.splits;
    }
    const std::string id = split.id;  // (the right side of = is evaluated first)
    ready_.push_back(id);
    released.ids.push_back(id);
    entries_[id] = Entry{std::move(split), -1};
  }
  // Successors no pooled token lies in are done, or were superseded by a newer topology.
  successors_.erase(std::remove_if(successors_.begin(), successors_.end(),
                                   [&](const RowKeyRange& s) {
                                     return std::none_of(pool_.begin(), pool_.end(),
                                                         [&](const HandedOverToken& t) {
                                                           return RangeContains(s, t.token.range);
                                                         });
                                   }),
                    successors_.end());
}

std::optional<BigtableChangeStreamSplit> ChangeStreamLedger::take(const std::string& split_id,
                                                                  int subtask) {
  auto pos = std::find(ready_.begin(), ready_.end(), split_id);
  if (pos == ready_.end()) return std::nullopt;
  ready_.erase(pos);
  Entry& e = entries_.at(split_id);
  e.subtask = subtask;
  return e.split;
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

std::optional<RowKeyRange> ChangeStreamLedger::first_gap() const {
  std::vector<RowKeyRange> ranges;
  for (const auto& [id, e] : entries_) ranges.push_back(e.split.partition);
  for (const auto& t : pool_) ranges.push_back(t.token.range);
  std::sort(ranges.begin(), ranges.end());
  std::string at;  // covered up to here
  for (const auto& r : ranges) {
    if (r.start != at) return RowKeyRange{std::min(at, r.start), std::max(at, r.start)};
    if (r.end.empty()) {
      return &r == &ranges.back() ? std::nullopt : std::optional<RowKeyRange>(RowKeyRange{at, ""});
    }
    at = r.end;
  }
  return RowKeyRange{at, ""};
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
  s.tokens = pool_;
  s.successors = successors_;
  return s;
}

}  // namespace gcpstream::bigtable
