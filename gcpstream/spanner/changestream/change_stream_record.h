#ifndef GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_RECORD_H_
#define GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_RECORD_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/spanner/v1/result_set.pb.h"

namespace gcpstream::spanner {

// One column a data-change record describes. `type_json` is the column's complete type
// descriptor as Spanner reported it (for example {"array_element_type":{"code":"INT64"},
// "code":"ARRAY"}), normalized: object members sorted recursively, no whitespace. It is kept
// whole rather than mapped to an enum, so nested arrays, annotations and type codes newer than
// this library survive.
struct ChangeStreamColumnType {
  std::string name;
  std::string type_json;
  bool is_primary_key = false;
  std::int64_t ordinal_position = 0;
  friend bool operator==(const ChangeStreamColumnType&, const ChangeStreamColumnType&) = default;
};

// One row modification. Each member is normalized JSON (members sorted recursively; normally an
// object), "null" when Spanner sent the member as JSON null, or std::nullopt when Spanner
// omitted it altogether; a column present with JSON null inside an object stays `"col":null`. Which
// halves are filled depends on the stream's value_capture_type (NEW_ROW has no old values, for
// example).
struct ChangeStreamMod {
  std::optional<std::string> keys;
  std::optional<std::string> new_values;
  std::optional<std::string> old_values;
  friend bool operator==(const ChangeStreamMod&, const ChangeStreamMod&) = default;
};

// A change to one table in one transaction, as one partition reported it. Immutable once
// built; copying is cheap enough for the per-record path (strings and small vectors).
struct DataChangeRecord {
  std::string partition_token;  // the partition that reported it ("" for the initial query)
  absl::Time commit_timestamp;
  std::string record_sequence;
  std::string server_transaction_id;
  bool is_last_record_in_transaction_in_partition = false;
  std::string table_name;
  std::vector<ChangeStreamColumnType> column_types;
  std::vector<ChangeStreamMod> mods;
  std::string mod_type;            // INSERT, UPDATE or DELETE
  std::string value_capture_type;  // OLD_AND_NEW_VALUES, NEW_VALUES, NEW_ROW, ...
  std::int64_t number_of_records_in_transaction = 0;
  std::int64_t number_of_partitions_in_transaction = 0;
  std::string transaction_tag;
  bool is_system_transaction = false;
  friend bool operator==(const DataChangeRecord&, const DataChangeRecord&) = default;
};

// The partition has no change up to `timestamp`.
struct HeartbeatRecord {
  absl::Time timestamp;
};

// The partition ends at `start_timestamp`; its key range continues in these partitions. A
// child lists every parent it has (two or more on a merge); the initial query's children
// list none.
struct ChildPartition {
  std::string token;
  std::vector<std::string> parent_tokens;
  friend bool operator==(const ChildPartition&, const ChildPartition&) = default;
};
struct ChildPartitionsRecord {
  absl::Time start_timestamp;
  std::string record_sequence;
  std::vector<ChildPartition> children;
};

using ChangeStreamRecord = std::variant<DataChangeRecord, HeartbeatRecord, ChildPartitionsRecord>;

// The deepest nesting of a JSON value from the service this library accepts (Spanner's own
// limit on JSON values is far lower); deeper text is refused before parsing, since printing a
// parsed value recurses once per level.
inline constexpr std::size_t kMaxChangeStreamJsonDepth = 256;

// JSON with object members sorted recursively and no whitespace (nlohmann's default object
// ordering). INVALID_ARGUMENT when `text` is not JSON or nests deeper than
// kMaxChangeStreamJsonDepth.
absl::StatusOr<std::string> NormalizeJson(std::string_view text);

// The records of one result row, in both dialects:
//  - GoogleSQL (READ_<stream>): one column of ARRAY<STRUCT<data_change_record ARRAY<...>,
//    heartbeat_record ARRAY<...>, child_partitions_record ARRAY<...>>>; its shape comes from
//    `row_type`.
//  - PostgreSQL (spanner.read_json_<stream>): one JSONB column holding
//    {"data_change_record": {...}} (or heartbeat_record / child_partitions_record).
// Both are turned into the same JSON objects and read by one parser, so the dialects cannot
// drift apart. INVALID_ARGUMENT naming the member when a record lacks a required member or has
// the wrong type; a record kind this library does not know is skipped (a newer service).
absl::StatusOr<std::vector<ChangeStreamRecord>> ParseChangeStreamRow(
    const google::spanner::v1::StructType& row_type,
    const std::vector<google::protobuf::Value>& values, const std::string& partition_token);

// The record kinds of one JSON object ({"data_change_record": {...}, ...}); exposed for tests.
absl::Status ParseChangeStreamJson(const nlohmann::json& object, const std::string& partition_token,
                                   std::vector<ChangeStreamRecord>& out);

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CHANGESTREAM_CHANGE_STREAM_RECORD_H_
