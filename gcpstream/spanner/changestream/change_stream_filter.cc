#include "gcpstream/spanner/changestream/change_stream_filter.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "gcpstream/api/status_macros.h"

namespace gcpstream::spanner {

ChangeStreamFilter::~ChangeStreamFilter() = default;

absl::StatusOr<std::shared_ptr<const ChangeStreamFilter>> ChangeStreamFilter::Create(
    const ChangeStreamFilterOptions& options) {
  constexpr std::string_view kSource = "SpannerChangeStreamSource";
  std::shared_ptr<ChangeStreamFilter> filter(new ChangeStreamFilter());
  GCP_ASSIGN_OR_RETURN(filter->tables_, connector::NamePatterns::Create(
                                            kSource, options.table_include, "table_include_list",
                                            options.table_exclude, "table_exclude_list"));
  GCP_ASSIGN_OR_RETURN(filter->columns_, connector::NamePatterns::Create(
                                             kSource, options.column_include, "column_include_list",
                                             options.column_exclude, "column_exclude_list"));
  filter->skip_without_change_ = options.skip_messages_without_change;
  filter->active_ = !options.empty();
  return std::shared_ptr<const ChangeStreamFilter>(std::move(filter));
}

bool ChangeStreamFilter::table_kept(const std::string& table) const { return tables_.keeps(table); }

bool ChangeStreamFilter::column_kept(const std::string& table, const std::string& column) const {
  return columns_.keeps(table + "." + column);
}

absl::StatusOr<ChangeStreamFilter::Outcome> ChangeStreamFilter::apply(
    DataChangeRecord& record) const {
  Outcome outcome;
  if (!active_) return outcome;
  if (!table_kept(record.table_name)) {
    outcome.kind = Outcome::kDropTable;
    return outcome;
  }
  if (!columns_.active()) return outcome;
  std::set<std::string> removed;
  for (const auto& column : record.column_types) {
    if (!column.is_primary_key && !column_kept(record.table_name, column.name)) {
      removed.insert(column.name);
    }
  }
  if (removed.empty()) return outcome;  // every column kept: the record as it came
  std::vector<ChangeStreamColumnType> kept;
  for (auto& column : record.column_types) {
    if (removed.count(column.name) > 0) {
      ++outcome.columns_removed;
    } else {
      kept.push_back(std::move(column));
    }
  }
  record.column_types = std::move(kept);
  bool any_value_left = false;
  std::int64_t values_removed = 0;
  auto project = [&](std::optional<std::string>& values) -> absl::Status {
    if (!values) return absl::OkStatus();
    nlohmann::json object = nlohmann::json::parse(*values, nullptr, false);
    if (object.is_null()) return absl::OkStatus();  // present as JSON null: nothing to project
    if (object.is_discarded() || !object.is_object()) {
      return absl::InvalidArgumentError(
          fmt::format("SpannerChangeStreamSource: a value object of table {} is not a JSON object",
                      record.table_name));
    }
    for (const auto& name : removed) {
      const auto n = static_cast<std::int64_t>(object.erase(name));
      outcome.columns_removed += n;
      values_removed += n;
    }
    if (!object.empty()) any_value_left = true;
    *values = object.dump();
    return absl::OkStatus();
  };
  for (auto& mod : record.mods) {
    GCP_RETURN_IF_ERROR(project(mod.new_values));
    GCP_RETURN_IF_ERROR(project(mod.old_values));
  }
  if (skip_without_change_ && values_removed > 0 && !any_value_left) {
    outcome.kind = Outcome::kDropNoChange;
    outcome.columns_removed = 0;  // only records handed to the deserializer count
  }
  return outcome;
}

}  // namespace gcpstream::spanner
