#ifndef GCPSTREAM_BIGTABLE_REQUESTS_CONDITIONAL_REQUEST_H_
#define GCPSTREAM_BIGTABLE_REQUESTS_CONDITIONAL_REQUEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gcpstream/bigtable/client/row_mutation_entry.h"
#include "google/bigtable/v2/bigtable.pb.h"

namespace gcpstream::bigtable {

// The predicate of a CheckAndMutateRow request: a Bigtable RowFilter evaluated against the row;
// the predicate matched when the filter leaves at least one cell. Value type.
//
// The three common checks:
//   latest_cell_value_equals(f, q, v)  the newest version of exactly f:q has exactly value v
//                                      (an older version with v does not match)
//   row_exists()                       the row has any cell at all
//   cell_exists(f, q)                  f:q has any version
// and the selections they are made of, composed with chain (one cell set narrowed step by step:
// not a boolean AND across different cells) and interleave (the union of the branches' cells).
// Qualifier and value selections match exactly (byte ranges); a family name is matched by an
// anchored, escaped expression, so no character of it acts as a pattern.
class ConditionalFilter {
 public:
  static ConditionalFilter latest_cell_value_equals(std::string family, std::string qualifier,
                                                    std::string value);
  static ConditionalFilter row_exists();
  static ConditionalFilter cell_exists(std::string family, std::string qualifier);

  static ConditionalFilter family(std::string family);
  static ConditionalFilter column(std::string family, std::string qualifier);
  static ConditionalFilter value(std::string value);
  // Values in [start, end) compared as bytes; an empty `end` has no upper bound.
  static ConditionalFilter value_range(std::string start, std::string end);
  // Cell timestamps in [start, end) µs; end 0: no upper bound.
  static ConditionalFilter timestamp_range(std::int64_t start_micros, std::int64_t end_micros);
  // The newest `n` versions of each column.
  static ConditionalFilter latest_versions(std::int32_t n);
  static ConditionalFilter chain(std::vector<ConditionalFilter> filters);
  static ConditionalFilter interleave(std::vector<ConditionalFilter> filters);

  const google::bigtable::v2::RowFilter& proto() const { return filter_; }
  // INVALID_ARGUMENT for a filter the service would refuse, found when it was built (an empty
  // or non-UTF-8 family name, latest_versions below 1, an empty chain or interleave);
  // ConditionalRequest::validate() reports it before any RPC.
  const absl::Status& validate() const { return error_; }

 private:
  explicit ConditionalFilter(google::bigtable::v2::RowFilter filter, absl::Status error = {})
      : filter_(std::move(filter)), error_(std::move(error)) {}
  google::bigtable::v2::RowFilter filter_;
  absl::Status error_;
};

// One CheckAndMutateRow request: a row key, a predicate, and the mutations to apply atomically
// when it matched (on_match) or did not (otherwise). Mutations are built with the
// RowMutationEntry setters and keep their order:
//
//   ConditionalRequest request("user#42", ConditionalFilter::latest_cell_value_equals(
//                                             "profile", "name", "Ada"));
//   request.on_match().set_cell("profile", "name", ts_micros, "Ada L.");
//
// Value type; thread-compatible.
class ConditionalRequest {
 public:
  ConditionalRequest(std::string row_key, ConditionalFilter predicate);

  RowMutationEntry& on_match() { return on_match_; }
  RowMutationEntry& otherwise() { return otherwise_; }
  const RowMutationEntry& on_match() const { return on_match_; }
  const RowMutationEntry& otherwise() const { return otherwise_; }
  const std::string& row_key() const { return on_match_.row_key(); }
  const ConditionalFilter& predicate() const { return predicate_; }
  // Serialized size of the key, the predicate and both branches (the in-flight byte cap).
  std::int64_t byte_size() const;

  // INVALID_ARGUMENT when the request cannot be sent: an empty or oversized row key, both
  // branches empty, a branch over 100,000 mutations (Bigtable's per-request limit, per branch),
  // an invalid SetCell timestamp, or an AddToCell / MergeToCell without a concrete
  // non-negative timestamp (no clock is assumed for an aggregate cell).
  absl::Status validate() const;

  // The wire request for `table_name` (projects/p/instances/i/tables/t) and `app_profile_id`.
  google::bigtable::v2::CheckAndMutateRowRequest to_proto(const std::string& table_name,
                                                          const std::string& app_profile_id) const;

 private:
  ConditionalFilter predicate_;
  RowMutationEntry on_match_;
  RowMutationEntry otherwise_;
};

// What a conditional request did.
struct ConditionalResult {
  std::string table_name;  // where it was sent
  std::string row_key;
  bool predicate_matched = false;
  // Whether the branch the predicate selected had mutations (an empty one applies nothing).
  bool selected_branch_has_mutations = false;
  friend bool operator==(const ConditionalResult&, const ConditionalResult&) = default;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_REQUESTS_CONDITIONAL_REQUEST_H_
