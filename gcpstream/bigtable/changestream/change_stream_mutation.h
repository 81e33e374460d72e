#ifndef GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_MUTATION_H_
#define GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_MUTATION_H_

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/time/time.h"

namespace gcpstream::bigtable {

// The input of an AddToCell or MergeToCell entry, as the change stream carried it
// (google.bigtable.v2.Value). kOther keeps any other Value kind as its serialized protobuf bytes.
struct ChangeStreamValue {
  enum class Type { kInt64, kRawValue, kRawTimestampMicros, kBytes, kOther };
  Type type = Type::kInt64;
  std::int64_t int_value = 0;  // kInt64, kRawTimestampMicros
  std::string bytes;           // kRawValue, kBytes, kOther
  Type get_type() const { return type; }
  friend bool operator==(const ChangeStreamValue&, const ChangeStreamValue&) = default;
};

// The five kinds of entry a change-stream mutation holds, in the service's order. Timestamps
// are microseconds since the epoch; a DeleteCells bound of 0 is "no bound" (start) and
// "unbounded" (end), as in the v2 TimestampRange.
struct SetCellEntry {
  std::string family, qualifier;
  std::int64_t timestamp_micros = 0;
  std::string value;
  friend bool operator==(const SetCellEntry&, const SetCellEntry&) = default;
};
struct DeleteCellsEntry {
  std::string family, qualifier;
  std::int64_t start_micros = 0, end_micros = 0;
  friend bool operator==(const DeleteCellsEntry&, const DeleteCellsEntry&) = default;
};
struct DeleteFamilyEntry {
  std::string family;
  friend bool operator==(const DeleteFamilyEntry&, const DeleteFamilyEntry&) = default;
};
struct AddToCellEntry {
  std::string family, qualifier;
  std::int64_t timestamp_micros = 0;
  ChangeStreamValue input;
  friend bool operator==(const AddToCellEntry&, const AddToCellEntry&) = default;
};
struct MergeToCellEntry {
  std::string family, qualifier;
  std::int64_t timestamp_micros = 0;
  ChangeStreamValue input;
  friend bool operator==(const MergeToCellEntry&, const MergeToCellEntry&) = default;
};
using ChangeStreamEntry = std::variant<SetCellEntry, DeleteCellsEntry, DeleteFamilyEntry,
                                       AddToCellEntry, MergeToCellEntry>;

enum class EntryKind { kSetCell, kDeleteCells, kDeleteFamily, kAddToCell, kMergeToCell };
inline EntryKind KindOf(const ChangeStreamEntry& e) { return static_cast<EntryKind>(e.index()); }
// The entry's family (every kind has one) and qualifier (empty for DeleteFamily).
const std::string& FamilyOf(const ChangeStreamEntry& e);
const std::string* QualifierOf(const ChangeStreamEntry& e);

enum class ChangeStreamMutationType { kUser, kGarbageCollection };

// One atomic row mutation read from a Bigtable change stream: what the service's DataChange
// carried once reassembled from its messages and chunks. Immutable, compared by value. It
// deliberately has no printing helper: the row key and the values are the user's table data.
class BigtableChangeStreamMutation {
 public:
  BigtableChangeStreamMutation(std::string row_key, ChangeStreamMutationType type,
                               std::string source_cluster, absl::Time commit_timestamp,
                               std::int32_t tiebreaker, std::string token,
                               absl::Time estimated_low_watermark,
                               std::vector<ChangeStreamEntry> entries)
      : row_key_(std::move(row_key)),
        type_(type),
        source_cluster_(std::move(source_cluster)),
        commit_timestamp_(commit_timestamp),
        tiebreaker_(tiebreaker),
        token_(std::move(token)),
        low_watermark_(estimated_low_watermark),
        entries_(std::move(entries)) {}

  const std::string& row_key() const { return row_key_; }
  ChangeStreamMutationType type() const { return type_; }
  // The cluster that applied a user mutation; empty for garbage collection.
  const std::string& source_cluster() const { return source_cluster_; }
  absl::Time commit_timestamp() const { return commit_timestamp_; }
  // Bigtable's conflict resolution between clusters: at equal commit timestamps the larger wins.
  std::int32_t tiebreaker() const { return tiebreaker_; }
  // The continuation token after this mutation (opaque).
  const std::string& token() const { return token_; }
  absl::Time estimated_low_watermark() const { return low_watermark_; }
  // In the order the service applied them.
  const std::vector<ChangeStreamEntry>& entries() const { return entries_; }

  // The same mutation with other entries (what the output filters keep).
  BigtableChangeStreamMutation with_entries(std::vector<ChangeStreamEntry> entries) const {
    BigtableChangeStreamMutation copy = *this;
    copy.entries_ = std::move(entries);
    return copy;
  }

  friend bool operator==(const BigtableChangeStreamMutation&,
                         const BigtableChangeStreamMutation&) = default;

 private:
  std::string row_key_;
  ChangeStreamMutationType type_;
  std::string source_cluster_;
  absl::Time commit_timestamp_;
  std::int32_t tiebreaker_;
  std::string token_;
  absl::Time low_watermark_;
  std::vector<ChangeStreamEntry> entries_;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_MUTATION_H_
