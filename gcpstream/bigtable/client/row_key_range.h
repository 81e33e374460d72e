#ifndef GCPSTREAM_BIGTABLE_CLIENT_ROW_KEY_RANGE_H_
#define GCPSTREAM_BIGTABLE_CLIENT_ROW_KEY_RANGE_H_

#include <string>
#include <string_view>
#include <vector>

#include "google/bigtable/v2/data.pb.h"

namespace gcpstream::bigtable {

// A half-open row-key range [start, end): an empty start is the beginning of the key space, an
// empty end its end, so {"", ""} is the whole table. Every range the connector handles is kept
// in this one form: an inclusive end `k` is the exclusive end `k\x00` (the next key in
// byte-wise order), and an exclusive start `k` the inclusive start `k\x00`.
struct RowKeyRange {
  std::string start;
  std::string end;
  friend bool operator==(const RowKeyRange&, const RowKeyRange&) = default;
  friend bool operator<(const RowKeyRange& a, const RowKeyRange& b) {
    return a.start != b.start ? a.start < b.start : a.end < b.end;
  }
};

// The range in the connector's notation: [ and ] include a key, ( and ) exclude it, * is a
// missing bound; printable bytes as text, others (and \ * ,) as \xNN. "(*, *)" is everything.
// For reading only: two ranges are never compared by their text.
std::string FormatRowRange(const RowKeyRange& range);

// Whether the range can hold no key at all (a bounded end at or before its start).
bool IsEmptyRange(const RowKeyRange& range);
// Whether `key` lies in the range.
bool RangeHolds(const RowKeyRange& range, std::string_view key);
// Every key that starts with `prefix`: [prefix, successor) where the successor drops trailing
// 0xFF bytes and increments the last byte left; a prefix of only 0xFF bytes (or none) has no
// successor and runs to the end of the table.
RowKeyRange PrefixRange(std::string_view prefix);
// The one key `key`: [key, key\x00).
RowKeyRange SingleKeyRange(std::string_view key);
// What is left of `range` after the row `key` (read in key order) was consumed: the range
// starting just past it. Empty when nothing is left.
RowKeyRange RangeAfter(const RowKeyRange& range, std::string_view key);
// Sorted, with overlapping and touching ranges merged and empty ones dropped.
std::vector<RowKeyRange> NormalizeRanges(std::vector<RowKeyRange> ranges);
// Cuts every range at every key of `boundaries` that falls strictly inside it (empty keys are
// ignored), keeping the pieces in order. The pieces tile exactly what `ranges` cover.
std::vector<RowKeyRange> CutRanges(const std::vector<RowKeyRange>& ranges,
                                   std::vector<std::string> boundaries);
// The ReadRows RowRange of a non-empty range (start_key_closed / end_key_open, each set only
// when bounded).
google::bigtable::v2::RowRange ToRowRangeProto(const RowKeyRange& range);

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CLIENT_ROW_KEY_RANGE_H_
