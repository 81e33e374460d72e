#ifndef GCPSTREAM_BIGTABLE_CLIENT_ROW_MUTATION_ENTRY_H_
#define GCPSTREAM_BIGTABLE_CLIENT_ROW_MUTATION_ENTRY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "google/bigtable/v2/bigtable.pb.h"

namespace gcpstream::bigtable {

// Bigtable refuses more than 100,000 mutations in one MutateRows request (and so in one entry).
inline constexpr std::int64_t kMaxMutationsPerRequest = 100'000;
// Bigtable's documented row key limit ("Limits": 4 KiB per row key).
inline constexpr std::int64_t kMaxRowKeyBytes = 4 * 1024;

// The column family a mutation names, or nullptr for one that names none (DeleteFromRow).
const std::string* FamilyOf(const google::bigtable::v2::Mutation& m);

// INVALID_ARGUMENT when an entry cannot be sent as it is: an empty row key or one over
// kMaxRowKeyBytes, no mutation, more than kMaxMutationsPerRequest mutations, a cell timestamp
// other than -1 or a multiple of 1000 µs, or a family name that is not UTF-8. The sink checks
// it before any RPC (the emulator answers an empty row key with INTERNAL, the service with
// INVALID_ARGUMENT: checking first makes both a failure of the record).
absl::Status ValidateEntry(const google::bigtable::v2::MutateRowsRequest::Entry& entry);
// The parts of ValidateEntry, for the other requests that carry a row key and mutations
// (CheckAndMutateRow branches, which may be empty): the row key alone, and a mutation list (at
// most kMaxMutationsPerRequest, UTF-8 family names, valid SetCell timestamps).
absl::Status ValidateRowKey(const std::string& row_key);
absl::Status ValidateMutations(
    const std::string& row_key,
    const google::protobuf::RepeatedPtrField<google::bigtable::v2::Mutation>& mutations);
// A row key as error messages show it: its first 64 bytes, C-escaped.
std::string RowKeyForMessages(const std::string& row_key);

// A value for an aggregate cell (add_to_cell / merge_to_cell). The wire variants stay distinct:
// an INT64 Sum family takes an int64 input; merging accumulator state takes bytes; `raw` is the
// unencoded form.
class AggregateValue {
 public:
  static AggregateValue int64(std::int64_t v) { return AggregateValue(Kind::kInt64, v, {}); }
  static AggregateValue bytes(std::string v) {
    return AggregateValue(Kind::kBytes, 0, std::move(v));
  }
  static AggregateValue raw(std::string v) { return AggregateValue(Kind::kRaw, 0, std::move(v)); }
  void to_proto(google::bigtable::v2::Value& out) const;

 private:
  enum class Kind { kInt64, kBytes, kRaw };
  AggregateValue(Kind kind, std::int64_t i, std::string b)
      : kind_(kind), int_(i), bytes_(std::move(b)) {}
  Kind kind_;
  std::int64_t int_ = 0;
  std::string bytes_;
};

// Microsecond timestamps. Bigtable tables have millisecond granularity, so an explicit
// timestamp must be a multiple of 1000.
struct TimestampRange {
  std::optional<std::int64_t> start_micros;  // inclusive; unset: from the beginning
  std::optional<std::int64_t> end_micros;    // exclusive; unset: to infinity
};

// The mutations of one row, applied atomically and in order (Bigtable's MutateRowsRequest
// entry). Built by a BigtableSerializationSchema; the sink forwards it unchanged.
//
//   RowMutationEntry entry("DTW#2001/01/01#0");
//   entry.delete_cells("f", "delay")                      // replace the column...
//        .set_cell("f", "delay", ts_micros, "66");        // ...atomically
//
// Value type; thread-compatible.
class RowMutationEntry {
 public:
  explicit RowMutationEntry(std::string row_key);

  // A cell with an explicit timestamp (µs since epoch; a multiple of 1000 for the service).
  // Replaying it overwrites the same version.
  RowMutationEntry& set_cell(std::string_view family, std::string_view qualifier,
                             std::int64_t timestamp_micros, std::string value);
  // A cell stamped with the writer's clock, truncated to milliseconds. A replay writes another
  // version.
  RowMutationEntry& set_cell(std::string_view family, std::string_view qualifier,
                             std::string value);
  // A cell stamped by the server (timestamp -1).
  RowMutationEntry& set_cell_server_time(std::string_view family, std::string_view qualifier,
                                         std::string value);
  RowMutationEntry& delete_cells(std::string_view family, std::string_view qualifier,
                                 TimestampRange range = {});
  RowMutationEntry& delete_family(std::string_view family);
  RowMutationEntry& delete_row();
  // Adds `input` to an aggregate cell (e.g. an INT64 Sum family) at `timestamp_micros`.
  RowMutationEntry& add_to_cell(std::string_view family, std::string_view qualifier,
                                std::int64_t timestamp_micros, const AggregateValue& input);
  // Merges accumulator state into an aggregate cell.
  RowMutationEntry& merge_to_cell(std::string_view family, std::string_view qualifier,
                                  std::int64_t timestamp_micros, const AggregateValue& input);

  const std::string& row_key() const { return entry_.row_key(); }
  std::int64_t mutation_count() const { return entry_.mutations_size(); }
  // Serialized size of the entry (what the in-flight byte cap counts).
  std::int64_t byte_size() const { return static_cast<std::int64_t>(entry_.ByteSizeLong()); }
  // ValidateEntry of this entry.
  absl::Status validate() const;

  // The wire form.
  const google::bigtable::v2::MutateRowsRequest::Entry& proto() const { return entry_; }
  google::bigtable::v2::MutateRowsRequest::Entry&& release() && { return std::move(entry_); }
  static RowMutationEntry from_proto(google::bigtable::v2::MutateRowsRequest::Entry entry);

 private:
  RowMutationEntry() = default;
  google::bigtable::v2::MutateRowsRequest::Entry entry_;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CLIENT_ROW_MUTATION_ENTRY_H_
