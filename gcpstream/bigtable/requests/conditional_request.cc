#include "gcpstream/bigtable/requests/conditional_request.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <utility>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/util/utf8.h"

namespace gcpstream::bigtable {
namespace {

namespace v2 = google::bigtable::v2;

// An aggregate mutation needs a concrete timestamp: the service has no "server time" for it.
absl::Status CheckAggregateTimestamps(const std::string& row_key, const char* branch,
                                      const v2::MutateRowsRequest::Entry& entry) {
  for (const auto& m : entry.mutations()) {
    const v2::Value* ts = nullptr;
    if (m.has_add_to_cell()) ts = &m.add_to_cell().timestamp();
    if (m.has_merge_to_cell()) ts = &m.merge_to_cell().timestamp();
    if (ts == nullptr) continue;
    if (ts->kind_case() != v2::Value::kRawTimestampMicros || ts->raw_timestamp_micros() < 0) {
      return absl::InvalidArgumentError(fmt::format(
          "the {} branch for row '{}' has an aggregate mutation without a concrete non-negative "
          "timestamp; AddToCell and MergeToCell need one",
          branch, RowKeyForMessages(row_key)));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckFamily(const std::string& family) {
  if (family.empty()) {
    return absl::InvalidArgumentError("a conditional filter names an empty column family");
  }
  if (auto at = util::InvalidUtf8At(family)) {
    return absl::InvalidArgumentError(fmt::format(
        "a conditional filter names a column family that is not valid UTF-8 (byte {})", *at));
  }
  return absl::OkStatus();
}

// The first error among parts, or one for an empty composition.
absl::Status FirstError(const std::vector<ConditionalFilter>& parts, const char* what) {
  if (parts.empty()) {
    return absl::InvalidArgumentError(fmt::format("an empty {} of conditional filters", what));
  }
  for (const auto& p : parts) {
    if (!p.validate().ok()) return p.validate();
  }
  return absl::OkStatus();
}

v2::RowFilter ColumnFilter(std::string family, std::string qualifier) {
  v2::RowFilter f;
  auto* range = f.mutable_column_range_filter();
  range->set_family_name(std::move(family));
  range->set_start_qualifier_closed(qualifier);
  range->set_end_qualifier_closed(std::move(qualifier));
  return f;
}

v2::RowFilter Chain(std::vector<v2::RowFilter> filters) {
  v2::RowFilter f;
  for (auto& filter : filters) *f.mutable_chain()->add_filters() = std::move(filter);
  return f;
}

v2::RowFilter LatestVersions(std::int32_t n) {
  v2::RowFilter f;
  f.set_cells_per_column_limit_filter(n);
  return f;
}

}  // namespace

ConditionalFilter ConditionalFilter::latest_cell_value_equals(std::string family,
                                                              std::string qualifier,
                                                              std::string value) {
  // Narrow to the column, then to its newest version, then test that version's bytes.
  return chain({column(std::move(family), std::move(qualifier)), latest_versions(1),
                ConditionalFilter::value(std::move(value))});
}

ConditionalFilter ConditionalFilter::row_exists() {
  v2::RowFilter f;
  f.set_cells_per_row_limit_filter(1);
  return ConditionalFilter(std::move(f));
}

ConditionalFilter ConditionalFilter::cell_exists(std::string family, std::string qualifier) {
  absl::Status error = CheckFamily(family);
  return ConditionalFilter(
      Chain({ColumnFilter(std::move(family), std::move(qualifier)), LatestVersions(1)}),
      std::move(error));
}

ConditionalFilter ConditionalFilter::family(std::string family) {
  v2::RowFilter f;
  absl::Status error = CheckFamily(family);
  f.set_family_name_regex_filter("^" + RE2::QuoteMeta(family) + "$");
  return ConditionalFilter(std::move(f), std::move(error));
}

ConditionalFilter ConditionalFilter::column(std::string family, std::string qualifier) {
  absl::Status error = CheckFamily(family);
  return ConditionalFilter(ColumnFilter(std::move(family), std::move(qualifier)), std::move(error));
}

ConditionalFilter ConditionalFilter::value(std::string value) {
  v2::RowFilter f;
  auto* range = f.mutable_value_range_filter();
  range->set_start_value_closed(value);
  range->set_end_value_closed(std::move(value));
  return ConditionalFilter(std::move(f));
}

ConditionalFilter ConditionalFilter::value_range(std::string start, std::string end) {
  v2::RowFilter f;
  auto* range = f.mutable_value_range_filter();
  range->set_start_value_closed(std::move(start));
  if (!end.empty()) range->set_end_value_open(std::move(end));
  return ConditionalFilter(std::move(f));
}

ConditionalFilter ConditionalFilter::timestamp_range(std::int64_t start_micros,
                                                     std::int64_t end_micros) {
  v2::RowFilter f;
  auto* range = f.mutable_timestamp_range_filter();
  range->set_start_timestamp_micros(start_micros);
  range->set_end_timestamp_micros(end_micros);
  return ConditionalFilter(std::move(f));
}

ConditionalFilter ConditionalFilter::latest_versions(std::int32_t n) {
  absl::Status error;
  if (n < 1) {
    error = absl::InvalidArgumentError(
        fmt::format("latest_versions needs at least 1 version (got {})", n));
  }
  return ConditionalFilter(LatestVersions(n), std::move(error));
}

ConditionalFilter ConditionalFilter::chain(std::vector<ConditionalFilter> filters) {
  absl::Status error = FirstError(filters, "chain");
  std::vector<v2::RowFilter> protos;
  for (auto& f : filters) protos.push_back(std::move(f.filter_));
  return ConditionalFilter(Chain(std::move(protos)), std::move(error));
}

ConditionalFilter ConditionalFilter::interleave(std::vector<ConditionalFilter> filters) {
  absl::Status error = FirstError(filters, "interleave");
  v2::RowFilter f;
  for (auto& filter : filters) *f.mutable_interleave()->add_filters() = std::move(filter.filter_);
  return ConditionalFilter(std::move(f), std::move(error));
}

ConditionalRequest::ConditionalRequest(std::string row_key, ConditionalFilter predicate)
    : predicate_(std::move(predicate)), on_match_(row_key), otherwise_(std::move(row_key)) {}

std::int64_t ConditionalRequest::byte_size() const {
  return static_cast<std::int64_t>(row_key().size() + predicate_.proto().ByteSizeLong()) +
         on_match_.byte_size() + otherwise_.byte_size();
}

absl::Status ConditionalRequest::validate() const {
  GCP_RETURN_IF_ERROR(ValidateRowKey(row_key()));
  if (!predicate_.validate().ok()) {
    return absl::InvalidArgumentError(
        fmt::format("the conditional request for row '{}' has an invalid predicate: {}",
                    RowKeyForMessages(row_key()), predicate_.validate().message()));
  }
  if (on_match_.mutation_count() == 0 && otherwise_.mutation_count() == 0) {
    return absl::InvalidArgumentError(fmt::format(
        "the conditional request for row '{}' has no mutation in either branch; at least one "
        "branch must have one",
        RowKeyForMessages(row_key())));
  }
  for (const auto* branch : {&on_match_, &otherwise_}) {
    const char* name = branch == &on_match_ ? "on_match" : "otherwise";
    GCP_RETURN_IF_ERROR(ValidateMutations(row_key(), branch->proto().mutations()));
    GCP_RETURN_IF_ERROR(CheckAggregateTimestamps(row_key(), name, branch->proto()));
  }
  return absl::OkStatus();
}

v2::CheckAndMutateRowRequest ConditionalRequest::to_proto(const std::string& table_name,
                                                          const std::string& app_profile_id) const {
  v2::CheckAndMutateRowRequest r;
  r.set_table_name(table_name);
  r.set_app_profile_id(app_profile_id);
  r.set_row_key(row_key());
  *r.mutable_predicate_filter() = predicate_.proto();
  *r.mutable_true_mutations() = on_match_.proto().mutations();
  *r.mutable_false_mutations() = otherwise_.proto().mutations();
  return r;
}

}  // namespace gcpstream::bigtable
