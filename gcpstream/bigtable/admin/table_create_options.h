#ifndef GCPSTREAM_BIGTABLE_ADMIN_TABLE_CREATE_OPTIONS_H_
#define GCPSTREAM_BIGTABLE_ADMIN_TABLE_CREATE_OPTIONS_H_

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "google/bigtable/admin/v2/table.pb.h"

namespace gcpstream::bigtable {

// A column family's garbage-collection rule: the four shapes of the admin API. Value type.
class GcRule {
 public:
  static GcRule max_versions(int n);
  static GcRule max_age(std::chrono::milliseconds age);
  // Delete cells matching any (union) / all (intersection) of the rules (at least two each).
  static GcRule union_of(std::vector<GcRule> rules);
  static GcRule intersection_of(std::vector<GcRule> rules);

  // INVALID_ARGUMENT for a non-positive count or age, or a composite of fewer than two rules.
  absl::Status validate() const;
  google::bigtable::admin::v2::GcRule to_proto() const;

 private:
  enum class Kind { kMaxVersions, kMaxAge, kUnion, kIntersection };
  Kind kind_ = Kind::kMaxVersions;
  int versions_ = 0;
  std::chrono::milliseconds age_{0};
  std::vector<GcRule> children_;
};

// The type of a column family: raw cells, or an aggregate with an INT64 input.
enum class ColumnFamilyType { kRaw, kInt64Sum, kInt64Min, kInt64Max, kInt64Hll };

std::string ColumnFamilyTypeName(ColumnFamilyType type);
// The type of an existing family as reported by GetTable (kRaw when it has no value type).
std::optional<ColumnFamilyType> ColumnFamilyTypeOf(
    const google::bigtable::admin::v2::ColumnFamily& f);

// The schema of tables the sink creates: column families with optional GC rules and types.
// Creation only, per family: families missing from an existing table are added; an existing
// family's rule is neither compared nor updated (its type is checked when aggregates are
// declared).
class TableCreateOptions {
 public:
  // Declares a family (a repeated name: last declaration wins).
  TableCreateOptions& column_family(std::string name, std::optional<GcRule> rule = std::nullopt,
                                    ColumnFamilyType type = ColumnFamilyType::kRaw);

  struct Family {
    std::optional<GcRule> rule;
    ColumnFamilyType type = ColumnFamilyType::kRaw;
  };
  const std::map<std::string, Family>& families() const { return families_; }
  bool declares_aggregates() const;
  // INVALID_ARGUMENT: no family, an empty name, or an invalid rule.
  absl::Status validate() const;
  google::bigtable::admin::v2::ColumnFamily family_proto(const std::string& name) const;
  google::bigtable::admin::v2::Table table_proto() const;

 private:
  std::map<std::string, Family> families_;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_ADMIN_TABLE_CREATE_OPTIONS_H_
