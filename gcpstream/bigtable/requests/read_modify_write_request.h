#ifndef GCPSTREAM_BIGTABLE_REQUESTS_READ_MODIFY_WRITE_REQUEST_H_
#define GCPSTREAM_BIGTABLE_REQUESTS_READ_MODIFY_WRITE_REQUEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/bigtable/client/bigtable_row.h"
#include "google/bigtable/v2/bigtable.pb.h"

namespace gcpstream::bigtable {

// One ReadModifyWriteRow request: ordered append / increment rules on one row, applied
// atomically by the service; a later rule on the same column sees the earlier one's result.
//
//   ReadModifyWriteRequest request("account#7");
//   request.append("activity", "notes", "paid;").increment("counters", "balance", -250);
//
// An increment adds a signed 64-bit amount (negative and zero allowed) to a cell holding an
// 8-byte big-endian integer; an unset cell counts as 0. Arithmetic and overflow are Bigtable's.
// Both families must exist. Value type; thread-compatible.
class ReadModifyWriteRequest {
 public:
  explicit ReadModifyWriteRequest(std::string row_key) : row_key_(std::move(row_key)) {}

  ReadModifyWriteRequest& append(std::string family, std::string qualifier, std::string value);
  ReadModifyWriteRequest& increment(std::string family, std::string qualifier, std::int64_t amount);

  const std::string& row_key() const { return row_key_; }
  std::int64_t rule_count() const { return static_cast<std::int64_t>(rules_.size()); }
  // Serialized size of the key and the rules (the in-flight byte cap).
  std::int64_t byte_size() const;

  // INVALID_ARGUMENT for: an empty or oversized row key, no rule, more than 100,000 rules
  // (Bigtable's per-request limit), an empty append value, a family name that is not UTF-8.
  absl::Status validate() const;

  google::bigtable::v2::ReadModifyWriteRowRequest to_proto(const std::string& table_name,
                                                           const std::string& app_profile_id) const;

 private:
  std::string row_key_;
  std::vector<google::bigtable::v2::ReadModifyWriteRule> rules_;
};

// What a read-modify-write request did: the cells it changed, with their new values (not the
// whole stored row, and one cell per column however many rules named it).
struct ReadModifyWriteResult {
  std::string table_name;
  BigtableRow row;
  friend bool operator==(const ReadModifyWriteResult&, const ReadModifyWriteResult&) = default;
};

// The 8-byte big-endian counter Bigtable stores for increments; INVALID_ARGUMENT for another
// length.
absl::StatusOr<std::int64_t> DecodeCounter(const std::string& value);

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_REQUESTS_READ_MODIFY_WRITE_REQUEST_H_
