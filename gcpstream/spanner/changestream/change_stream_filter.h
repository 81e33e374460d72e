#ifndef GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_FILTER_H_
#define GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_FILTER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/connector/name_patterns.h"
#include "gcpstream/spanner/changestream/change_stream_record.h"

namespace gcpstream::spanner {

// The connector-side output filters of SpannerChangeStreamSource. Each pattern is an RE2
// expression that must match the whole identifier (never a substring): table patterns see the
// record's table_name, column patterns see "<table_name>.<column_name>". No case folding and no
// unquoting: use the names exactly as the records carry them. Include and exclude lists of the
// same scope are mutually exclusive. Primary-key columns are always kept.
struct ChangeStreamFilterOptions {
  std::vector<std::string> table_include;
  std::vector<std::string> table_exclude;
  std::vector<std::string> column_include;
  std::vector<std::string> column_exclude;
  // Drop a record whose every reported non-key value was projected away (default: deliver it
  // with empty value objects, which still shows the transaction happened).
  bool skip_messages_without_change = false;

  bool empty() const {
    return table_include.empty() && table_exclude.empty() && column_include.empty() &&
           column_exclude.empty();
  }
};

// Applies ChangeStreamFilterOptions to records. Built once per reader; const methods are
// thread-safe.
class ChangeStreamFilter {
 public:
  // INVALID_ARGUMENT naming the option for an include list combined with its exclude list, or
  // a pattern RE2 refuses (with RE2's reason).
  static absl::StatusOr<std::shared_ptr<const ChangeStreamFilter>> Create(
      const ChangeStreamFilterOptions& options);
  ~ChangeStreamFilter();

  struct Outcome {
    enum Kind { kKeep, kDropTable, kDropNoChange } kind = kKeep;
    // Column occurrences removed: one per removed column_types entry plus one per removed member
    // of each old or new value object.
    std::int64_t columns_removed = 0;
  };
  // Filters `record` in place. A column filter that keeps every column of the record's metadata
  // leaves the record untouched (no JSON is parsed). INVALID_ARGUMENT when a value object does
  // not parse.
  absl::StatusOr<Outcome> apply(DataChangeRecord& record) const;

  bool active() const { return active_; }

 private:
  ChangeStreamFilter() = default;
  bool table_kept(const std::string& table) const;
  bool column_kept(const std::string& table, const std::string& column) const;

  connector::NamePatterns tables_;
  connector::NamePatterns columns_;
  bool skip_without_change_ = false;
  bool active_ = false;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_FILTER_H_
