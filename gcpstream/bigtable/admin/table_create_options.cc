#include "gcpstream/bigtable/admin/table_create_options.h"

#include <fmt/format.h>

#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::bigtable {

namespace admin = ::google::bigtable::admin::v2;

GcRule GcRule::max_versions(int n) {
  GcRule r;
  r.kind_ = Kind::kMaxVersions;
  r.versions_ = n;
  return r;
}

GcRule GcRule::max_age(std::chrono::milliseconds age) {
  GcRule r;
  r.kind_ = Kind::kMaxAge;
  r.age_ = age;
  return r;
}

GcRule GcRule::union_of(std::vector<GcRule> rules) {
  GcRule r;
  r.kind_ = Kind::kUnion;
  r.children_ = std::move(rules);
  return r;
}

GcRule GcRule::intersection_of(std::vector<GcRule> rules) {
  GcRule r;
  r.kind_ = Kind::kIntersection;
  r.children_ = std::move(rules);
  return r;
}

absl::Status GcRule::validate() const {
  switch (kind_) {
    case Kind::kMaxVersions:
      if (versions_ < 1) return absl::InvalidArgumentError("GcRule max_versions must be >= 1");
      return absl::OkStatus();
    case Kind::kMaxAge:
      if (age_.count() <= 0) return absl::InvalidArgumentError("GcRule max_age must be positive");
      return absl::OkStatus();
    case Kind::kUnion:
    case Kind::kIntersection:
      if (children_.size() < 2) {
        return absl::InvalidArgumentError("GcRule union/intersection needs at least two rules");
      }
      for (const auto& c : children_) {
        if (absl::Status s = c.validate(); !s.ok()) return s;
      }
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

admin::GcRule GcRule::to_proto() const {
  admin::GcRule out;
  switch (kind_) {
    case Kind::kMaxVersions:
      out.set_max_num_versions(versions_);
      break;
    case Kind::kMaxAge: {
      const auto ms = age_.count();
      out.mutable_max_age()->set_seconds(ms / 1000);
      out.mutable_max_age()->set_nanos(static_cast<int>((ms % 1000) * 1'000'000));
      break;
    }
    case Kind::kUnion:
      for (const auto& c : children_) *out.mutable_union_()->add_rules() = c.to_proto();
      break;
    case Kind::kIntersection:
      for (const auto& c : children_) *out.mutable_intersection()->add_rules() = c.to_proto();
      break;
  }
  return out;
}

std::string ColumnFamilyTypeName(ColumnFamilyType type) {
  switch (type) {
    case ColumnFamilyType::kRaw:
      return "RAW";
    case ColumnFamilyType::kInt64Sum:
      return "INT64_SUM";
    case ColumnFamilyType::kInt64Min:
      return "INT64_MIN";
    case ColumnFamilyType::kInt64Max:
      return "INT64_MAX";
    case ColumnFamilyType::kInt64Hll:
      return "INT64_HLL";
  }
  return "UNKNOWN";
}

std::optional<ColumnFamilyType> ColumnFamilyTypeOf(const admin::ColumnFamily& f) {
  if (!f.has_value_type()) return ColumnFamilyType::kRaw;
  const auto& t = f.value_type();
  if (!t.has_aggregate_type()) return std::nullopt;  // some other typed family
  const auto& a = t.aggregate_type();
  if (!a.input_type().has_int64_type()) return std::nullopt;
  if (a.has_sum()) return ColumnFamilyType::kInt64Sum;
  if (a.has_min()) return ColumnFamilyType::kInt64Min;
  if (a.has_max()) return ColumnFamilyType::kInt64Max;
  if (a.has_hllpp_unique_count()) return ColumnFamilyType::kInt64Hll;
  return std::nullopt;
}

TableCreateOptions& TableCreateOptions::column_family(std::string name, std::optional<GcRule> rule,
                                                      ColumnFamilyType type) {
  families_[std::move(name)] = Family{std::move(rule), type};
  return *this;
}

bool TableCreateOptions::declares_aggregates() const {
  for (const auto& [name, f] : families_) {
    if (f.type != ColumnFamilyType::kRaw) return true;
  }
  return false;
}

absl::Status TableCreateOptions::validate() const {
  if (families_.empty()) {
    return absl::InvalidArgumentError(
        "table_create_options must declare at least one column family (a table created bare "
        "would reject every mutation)");
  }
  for (const auto& [name, f] : families_) {
    if (name.empty()) return absl::InvalidArgumentError("a column family needs a name");
    if (f.rule) {
      if (absl::Status s = f.rule->validate(); !s.ok()) {
        return absl::InvalidArgumentError(fmt::format("column family '{}': {}", name, s.message()));
      }
    }
  }
  return absl::OkStatus();
}

admin::ColumnFamily TableCreateOptions::family_proto(const std::string& name) const {
  admin::ColumnFamily out;
  auto it = families_.find(name);
  if (it == families_.end()) return out;
  if (it->second.rule) *out.mutable_gc_rule() = it->second.rule->to_proto();
  if (it->second.type != ColumnFamilyType::kRaw) {
    auto* aggregate = out.mutable_value_type()->mutable_aggregate_type();
    aggregate->mutable_input_type()
        ->mutable_int64_type()
        ->mutable_encoding()
        ->mutable_big_endian_bytes();
    switch (it->second.type) {
      case ColumnFamilyType::kInt64Sum:
        aggregate->mutable_sum();
        break;
      case ColumnFamilyType::kInt64Min:
        aggregate->mutable_min();
        break;
      case ColumnFamilyType::kInt64Max:
        aggregate->mutable_max();
        break;
      case ColumnFamilyType::kInt64Hll:
        aggregate->mutable_hllpp_unique_count();
        break;
      case ColumnFamilyType::kRaw:
        break;
    }
  }
  return out;
}

admin::Table TableCreateOptions::table_proto() const {
  admin::Table table;
  for (const auto& [name, f] : families_) {
    (*table.mutable_column_families())[name] = family_proto(name);
  }
  return table;
}

}  // namespace gcpstream::bigtable
