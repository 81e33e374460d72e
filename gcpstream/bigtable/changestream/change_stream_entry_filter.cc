#include "gcpstream/bigtable/changestream/change_stream_entry_filter.h"

#include "absl/strings/escaping.h"
#include "gcpstream/api/status_macros.h"

namespace gcpstream::bigtable {

absl::StatusOr<std::shared_ptr<const ChangeStreamEntryFilter>> ChangeStreamEntryFilter::Create(
    const ChangeStreamEntryFilterOptions& options) {
  constexpr std::string_view kSource = "BigtableChangeStreamSource";
  auto filter = std::make_shared<ChangeStreamEntryFilter>();
  GCP_ASSIGN_OR_RETURN(
      filter->families_,
      connector::NamePatterns::Create(kSource, options.family_include, "family_include_list",
                                      options.family_exclude, "family_exclude_list"));
  GCP_ASSIGN_OR_RETURN(
      filter->qualifiers_,
      connector::NamePatterns::Create(kSource, options.qualifier_include, "qualifier_include_list",
                                      options.qualifier_exclude, "qualifier_exclude_list"));
  filter->skip_without_change_ = options.skip_messages_without_change;
  return std::shared_ptr<const ChangeStreamEntryFilter>(std::move(filter));
}

bool ChangeStreamEntryFilter::keeps(const ChangeStreamEntry& entry) const {
  const std::string& family = FamilyOf(entry);
  if (!families_.keeps(family)) return false;
  const std::string* qualifier = QualifierOf(entry);
  if (qualifier == nullptr || !qualifiers_.active()) return true;
  return qualifiers_.keeps(family + ":" + absl::Base64Escape(*qualifier));
}

ChangeStreamEntryFilter::Outcome ChangeStreamEntryFilter::apply(
    std::optional<BigtableChangeStreamMutation>& mutation) const {
  Outcome outcome;
  if (!active() || !mutation) return outcome;
  const auto& entries = mutation->entries();
  std::vector<ChangeStreamEntry> kept;
  kept.reserve(entries.size());
  for (const auto& e : entries) {
    if (keeps(e)) kept.push_back(e);
  }
  outcome.entries_removed = static_cast<std::int64_t>(entries.size() - kept.size());
  if (outcome.entries_removed == 0) return outcome;
  outcome.skip = kept.empty() && skip_without_change_;
  mutation = mutation->with_entries(std::move(kept));
  return outcome;
}

}  // namespace gcpstream::bigtable
