#ifndef GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_ENTRY_FILTER_H_
#define GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_ENTRY_FILTER_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "gcpstream/bigtable/changestream/change_stream_mutation.h"
#include "gcpstream/bigtable/changestream/change_stream_options.h"
#include "gcpstream/connector/name_patterns.h"

namespace gcpstream::bigtable {

// Applies ChangeStreamEntryFilterOptions to mutations: keeps the entries both dimensions pass,
// in their order, and every mutation-level field. Immutable; thread-safe.
class ChangeStreamEntryFilter {
 public:
  // INVALID_ARGUMENT for an include list combined with its exclude list, or a bad pattern.
  static absl::StatusOr<std::shared_ptr<const ChangeStreamEntryFilter>> Create(
      const ChangeStreamEntryFilterOptions& options);

  struct Outcome {
    std::int64_t entries_removed = 0;
    // True when every entry went and skip_messages_without_change is set: do not deserialize.
    bool skip = false;
  };
  // Filters `mutation` (replaced only when an entry goes).
  Outcome apply(std::optional<BigtableChangeStreamMutation>& mutation) const;
  bool active() const { return families_.active() || qualifiers_.active(); }

 private:
  bool keeps(const ChangeStreamEntry& entry) const;
  connector::NamePatterns families_;
  connector::NamePatterns qualifiers_;
  bool skip_without_change_ = false;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_ENTRY_FILTER_H_
