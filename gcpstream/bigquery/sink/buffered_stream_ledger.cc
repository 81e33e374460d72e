#include "gcpstream/bigquery/sink/buffered_stream_ledger.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/util/bytes.h"

namespace gcpstream::bigquery {

absl::StatusOr<std::string> BufferedStreamPositionSerializer::serialize(
    const BufferedStreamPosition& p) const {
  util::ByteWriter out;
  out.put_string(p.table);
  out.put_string(p.stream);
  out.put_i64(p.offset);
  return out.take();
}

absl::StatusOr<BufferedStreamPosition> BufferedStreamPositionSerializer::deserialize(
    int version, std::string_view bytes) const {
  if (version != 1) return util::UnknownVersion("BufferedStreamPosition", version, 1);
  util::ByteReader in(bytes);
  BufferedStreamPosition p;
  GCP_ASSIGN_OR_RETURN(p.table, in.string());
  GCP_ASSIGN_OR_RETURN(p.stream, in.string());
  GCP_ASSIGN_OR_RETURN(p.offset, in.i64());
  if (!in.done()) return absl::DataLossError("BufferedStreamPosition: trailing bytes");
  if (p.table.empty() || p.stream.rfind(p.table + "/streams/", 0) != 0 || p.offset < 0) {
    return absl::DataLossError(
        fmt::format("BufferedStreamPosition: corrupt state (table '{}', stream '{}', offset {})",
                    p.table, p.stream, p.offset));
  }
  return p;
}

BufferedStreamLedger::BufferedStreamLedger(std::vector<BufferedStreamPosition> restored) {
  for (auto& p : restored) {
    auto [it, inserted] = entries_.try_emplace(p.table);
    if (!inserted) {
      spdlog::info(
          "BigQuery exactly-once sink: restored two streams for {}; continuing on {}, leaving {} "
          "(its checkpointed rows are committed by the restored committables)",
          p.table, it->second.stream, p.stream);
      continue;
    }
    it->second = Entry{std::move(p.stream), p.offset, p.offset, true};
  }
}

std::optional<BufferedStreamPosition> BufferedStreamLedger::adopt(const std::string& table) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(table);
  if (it == entries_.end() || !it->second.restored) return std::nullopt;
  it->second.restored = false;
  return BufferedStreamPosition{table, it->second.stream, it->second.end};
}

void BufferedStreamLedger::acknowledged(const std::string& table, const std::string& stream,
                                        std::int64_t end) {
  std::lock_guard lock(mu_);
  Entry& e = entries_[table];
  if (e.stream != stream) {
    e.stream = stream;
    e.committed = 0;
  }
  e.restored = false;
  e.end = end;
}

std::vector<BufferedStreamPosition> BufferedStreamLedger::prepare_commit() {
  std::lock_guard lock(mu_);
  std::vector<BufferedStreamPosition> out;
  for (auto& [table, e] : entries_) {
    if (e.end <= e.committed) continue;
    out.push_back({table, e.stream, e.end});
    e.committed = e.end;
  }
  return out;
}

std::vector<BufferedStreamPosition> BufferedStreamLedger::snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<BufferedStreamPosition> out;
  for (const auto& [table, e] : entries_) {
    if (!e.stream.empty()) out.push_back({table, e.stream, e.end});
  }
  return out;
}

bool BufferedStreamLedger::clean(const std::string& table) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(table);
  return it == entries_.end() || it->second.end <= it->second.committed;
}

void BufferedStreamLedger::release(const std::string& table) {
  std::lock_guard lock(mu_);
  entries_.erase(table);
}

}  // namespace gcpstream::bigquery
