#include "gcpstream/bigtable/client/row_key_range.h"

#include <fmt/format.h>

#include <algorithm>

namespace gcpstream::bigtable {
namespace {

void AppendKey(std::string& out, const std::string& key) {
  for (unsigned char c : key) {
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '*' && c != ',') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
}

// Whether end `a` comes before end `b` (an empty end is past every key).
bool EndBefore(const std::string& a, const std::string& b) {
  if (a.empty()) return false;
  return b.empty() || a < b;
}

}  // namespace

std::string FormatRowRange(const RowKeyRange& range) {
  std::string out;
  if (range.start.empty()) {
    out = "(*";
  } else {
    out = "[";
    AppendKey(out, range.start);
  }
  out += ", ";
  if (range.end.empty()) {
    out += "*)";
  } else {
    AppendKey(out, range.end);
    out += ")";
  }
  return out;
}

bool IsEmptyRange(const RowKeyRange& range) {
  return !range.end.empty() && range.start >= range.end;
}

bool RangeHolds(const RowKeyRange& range, std::string_view key) {
  return key >= range.start && (range.end.empty() || key < range.end);
}

RowKeyRange PrefixRange(std::string_view prefix) {
  RowKeyRange range{std::string(prefix), std::string(prefix)};
  while (!range.end.empty() && static_cast<unsigned char>(range.end.back()) == 0xff) {
    range.end.pop_back();
  }
  if (!range.end.empty()) range.end.back() = static_cast<char>(range.end.back() + 1);
  return range;
}

RowKeyRange SingleKeyRange(std::string_view key) {
  RowKeyRange range{std::string(key), std::string(key)};
  range.end.push_back('\0');
  return range;
}

RowKeyRange RangeAfter(const RowKeyRange& range, std::string_view key) {
  RowKeyRange rest = range;
  std::string next(key);
  next.push_back('\0');
  if (next > rest.start) rest.start = std::move(next);
  return rest;
}

std::vector<RowKeyRange> NormalizeRanges(std::vector<RowKeyRange> ranges) {
  ranges.erase(std::remove_if(ranges.begin(), ranges.end(), IsEmptyRange), ranges.end());
  std::sort(ranges.begin(), ranges.end());
  std::vector<RowKeyRange> out;
  for (auto& range : ranges) {
    // Touching ([a, b) then [b, c)) merges as well as overlapping.
    if (!out.empty() && (out.back().end.empty() || range.start <= out.back().end)) {
      if (EndBefore(out.back().end, range.end)) out.back().end = std::move(range.end);
      continue;
    }
    out.push_back(std::move(range));
  }
  return out;
}

std::vector<RowKeyRange> CutRanges(const std::vector<RowKeyRange>& ranges,
                                   std::vector<std::string> boundaries) {
  std::sort(boundaries.begin(), boundaries.end());
  boundaries.erase(std::unique(boundaries.begin(), boundaries.end()), boundaries.end());
  std::vector<RowKeyRange> out;
  for (const RowKeyRange& range : ranges) {
    std::string start = range.start;
    for (auto it = std::upper_bound(boundaries.begin(), boundaries.end(), range.start);
         it != boundaries.end() && (range.end.empty() || *it < range.end); ++it) {
      if (it->empty()) continue;
      out.push_back(RowKeyRange{start, *it});
      start = *it;
    }
    out.push_back(RowKeyRange{std::move(start), range.end});
  }
  return out;
}

google::bigtable::v2::RowRange ToRowRangeProto(const RowKeyRange& range) {
  google::bigtable::v2::RowRange proto;
  if (!range.start.empty()) proto.set_start_key_closed(range.start);
  if (!range.end.empty()) proto.set_end_key_open(range.end);
  return proto;
}

}  // namespace gcpstream::bigtable
