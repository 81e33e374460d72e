#include "gcpstream/spanner/changestream/change_stream_record.h"

#include <fmt/format.h>

#include "absl/strings/numbers.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/spanner/client/value.h"
#include "gcpstream/util/absl_fmt.h"
#include "gcpstream/util/json.h"

namespace gcpstream::spanner {

namespace sp = google::spanner::v1;
using nlohmann::json;

namespace {

absl::Status Bad(std::string_view what) {
  return absl::InvalidArgumentError(
      fmt::format("Spanner change stream: unexpected record shape: {}", what));
}

// A GoogleSQL value of type `type` as the JSON the PostgreSQL function returns: structs become
// objects named by their fields, JSON columns are parsed, everything else keeps its wire form
// (INT64 as a decimal string, TIMESTAMP as RFC 3339).
absl::StatusOr<json> ToJson(const sp::Type& type, const google::protobuf::Value& value) {
  if (value.has_null_value()) return json(nullptr);
  switch (type.code()) {
    case sp::STRUCT: {
      if (!value.has_list_value()) return Bad("a STRUCT value that is not a list");
      const auto& fields = type.struct_type().fields();
      const auto& items = value.list_value().values();
      if (items.size() != fields.size()) return Bad("a STRUCT with the wrong field count");
      json object = json::object();
      for (int i = 0; i < fields.size(); ++i) {
        // A JSON member that is SQL NULL is one Spanner omitted: leave it out, so it stays
        // distinct from a member present as JSON null (as in the PostgreSQL shape).
        if (fields[i].type().code() == sp::JSON && items[i].has_null_value()) continue;
        GCP_ASSIGN_OR_RETURN(object[fields[i].name()], ToJson(fields[i].type(), items[i]));
      }
      return object;
    }
    case sp::ARRAY: {
      if (!value.has_list_value()) return Bad("an ARRAY value that is not a list");
      json array = json::array();
      for (const auto& item : value.list_value().values()) {
        GCP_ASSIGN_OR_RETURN(json element, ToJson(type.array_element_type(), item));
        array.push_back(std::move(element));
      }
      return array;
    }
    case sp::JSON: {
      if (!value.has_string_value()) return Bad("a JSON value that is not a string");
      auto parsed = util::ParseJsonBounded(value.string_value(), kMaxChangeStreamJsonDepth);
      if (!parsed.ok()) return Bad(fmt::format("a JSON member: {}", parsed.status().message()));
      return *std::move(parsed);
    }
    case sp::BOOL:
      if (!value.has_bool_value()) return Bad("a BOOL value that is not a bool");
      return json(value.bool_value());
    default:
      if (value.has_string_value()) return json(value.string_value());
      if (value.has_number_value()) return json(value.number_value());
      if (value.has_bool_value()) return json(value.bool_value());
      return Bad("a scalar of an unknown shape");
  }
}

absl::StatusOr<const json*> Member(const json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end()) return Bad(fmt::format("member '{}' is missing", name));
  return &*it;
}

absl::StatusOr<std::string> String(const json& object, const char* name) {
  GCP_ASSIGN_OR_RETURN(const json* v, Member(object, name));
  if (v->is_null()) return std::string();
  if (!v->is_string()) return Bad(fmt::format("member '{}' is not a string", name));
  return v->get<std::string>();
}

absl::StatusOr<bool> Bool(const json& object, const char* name) {
  GCP_ASSIGN_OR_RETURN(const json* v, Member(object, name));
  if (v->is_null()) return false;
  if (!v->is_boolean()) return Bad(fmt::format("member '{}' is not a bool", name));
  return v->get<bool>();
}

// INT64 arrives as a decimal string from GoogleSQL and as a number from PostgreSQL.
absl::StatusOr<std::int64_t> Int(const json& object, const char* name) {
  GCP_ASSIGN_OR_RETURN(const json* v, Member(object, name));
  if (v->is_null()) return 0;
  std::int64_t n = 0;
  if (v->is_number_integer()) return v->get<std::int64_t>();
  if (v->is_string() && absl::SimpleAtoi(v->get<std::string>(), &n)) return n;
  return Bad(fmt::format("member '{}' is not an integer", name));
}

absl::StatusOr<absl::Time> Time(const json& object, const char* name) {
  GCP_ASSIGN_OR_RETURN(const json* v, Member(object, name));
  if (!v->is_string()) return Bad(fmt::format("member '{}' is not a timestamp", name));
  auto t = ParseTimestamp(v->get<std::string>());
  if (!t.ok()) return Bad(fmt::format("member '{}': {}", name, t.status().message()));
  return *t;
}

// A JSON member kept as normalized text: std::nullopt when Spanner omitted it, "null" when it
// is present as JSON null.
absl::StatusOr<std::optional<std::string>> JsonText(const json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end()) return std::optional<std::string>();
  const json* v = &*it;
  json parsed;
  if (v->is_string()) {
    // A JSON member a dialect delivered as text.
    auto text = util::ParseJsonBounded(v->get<std::string>(), kMaxChangeStreamJsonDepth);
    if (!text.ok()) return Bad(fmt::format("member '{}': {}", name, text.status().message()));
    parsed = *std::move(text);
    v = &parsed;
  }
  return std::optional<std::string>(v->dump());
}

absl::StatusOr<DataChangeRecord> ParseDataChange(const json& r, const std::string& token) {
  DataChangeRecord out;
  out.partition_token = token;
  GCP_ASSIGN_OR_RETURN(out.commit_timestamp, Time(r, "commit_timestamp"));
  GCP_ASSIGN_OR_RETURN(out.record_sequence, String(r, "record_sequence"));
  GCP_ASSIGN_OR_RETURN(out.server_transaction_id, String(r, "server_transaction_id"));
  GCP_ASSIGN_OR_RETURN(out.is_last_record_in_transaction_in_partition,
                       Bool(r, "is_last_record_in_transaction_in_partition"));
  GCP_ASSIGN_OR_RETURN(out.table_name, String(r, "table_name"));
  GCP_ASSIGN_OR_RETURN(out.mod_type, String(r, "mod_type"));
  GCP_ASSIGN_OR_RETURN(out.value_capture_type, String(r, "value_capture_type"));
  GCP_ASSIGN_OR_RETURN(out.number_of_records_in_transaction,
                       Int(r, "number_of_records_in_transaction"));
  GCP_ASSIGN_OR_RETURN(out.number_of_partitions_in_transaction,
                       Int(r, "number_of_partitions_in_transaction"));
  if (r.contains("transaction_tag")) {
    GCP_ASSIGN_OR_RETURN(out.transaction_tag, String(r, "transaction_tag"));
  }
  if (r.contains("is_system_transaction")) {
    GCP_ASSIGN_OR_RETURN(out.is_system_transaction, Bool(r, "is_system_transaction"));
  }
  GCP_ASSIGN_OR_RETURN(const json* columns, Member(r, "column_types"));
  if (!columns->is_array()) return Bad("'column_types' is not an array");
  for (const json& c : *columns) {
    if (!c.is_object()) return Bad("a column type is not an object");
    ChangeStreamColumnType column;
    GCP_ASSIGN_OR_RETURN(column.name, String(c, "name"));
    GCP_ASSIGN_OR_RETURN(std::optional<std::string> type, JsonText(c, "type"));
    if (!type) return Bad(fmt::format("column '{}' has no type", column.name));
    column.type_json = std::move(*type);
    GCP_ASSIGN_OR_RETURN(column.is_primary_key, Bool(c, "is_primary_key"));
    GCP_ASSIGN_OR_RETURN(column.ordinal_position, Int(c, "ordinal_position"));
    out.column_types.push_back(std::move(column));
  }
  GCP_ASSIGN_OR_RETURN(const json* mods, Member(r, "mods"));
  if (!mods->is_array()) return Bad("'mods' is not an array");
  for (const json& m : *mods) {
    if (!m.is_object()) return Bad("a mod is not an object");
    ChangeStreamMod mod;
    GCP_ASSIGN_OR_RETURN(mod.keys, JsonText(m, "keys"));
    GCP_ASSIGN_OR_RETURN(mod.new_values, JsonText(m, "new_values"));
    GCP_ASSIGN_OR_RETURN(mod.old_values, JsonText(m, "old_values"));
    out.mods.push_back(std::move(mod));
  }
  return out;
}

absl::StatusOr<ChildPartitionsRecord> ParseChildren(const json& r) {
  ChildPartitionsRecord out;
  GCP_ASSIGN_OR_RETURN(out.start_timestamp, Time(r, "start_timestamp"));
  GCP_ASSIGN_OR_RETURN(out.record_sequence, String(r, "record_sequence"));
  GCP_ASSIGN_OR_RETURN(const json* children, Member(r, "child_partitions"));
  // An empty list would end a partition with nobody to take its key range over.
  if (!children->is_array() || children->empty()) {
    return Bad("'child_partitions' is not a non-empty array");
  }
  for (const json& c : *children) {
    if (!c.is_object()) return Bad("a child partition is not an object");
    ChildPartition child;
    GCP_ASSIGN_OR_RETURN(child.token, String(c, "token"));
    if (child.token.empty()) return Bad("a child partition without a token");
    GCP_ASSIGN_OR_RETURN(const json* parents, Member(c, "parent_partition_tokens"));
    if (!parents->is_null()) {
      if (!parents->is_array()) return Bad("'parent_partition_tokens' is not an array");
      for (const json& p : *parents) {
        if (!p.is_string()) return Bad("a parent partition token is not a string");
        child.parent_tokens.push_back(p.get<std::string>());
      }
    }
    out.children.push_back(std::move(child));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> NormalizeJson(std::string_view text) {
  GCP_ASSIGN_OR_RETURN(json parsed, util::ParseJsonBounded(text, kMaxChangeStreamJsonDepth));
  return parsed.dump();
}

absl::Status ParseChangeStreamJson(const json& object, const std::string& partition_token,
                                   std::vector<ChangeStreamRecord>& out) {
  if (!object.is_object()) return Bad("a change record that is not an object");
  // In the service's order of kinds (a child-partitions record ends a partition, so it goes
  // last), not the object's member order.
  for (const std::string kind :
       {"data_change_record", "heartbeat_record", "child_partitions_record"}) {
    auto member = object.find(kind);
    if (member == object.end()) continue;
    const json& value = *member;
    // GoogleSQL wraps each kind in an array (of zero or one); PostgreSQL gives the object.
    std::vector<const json*> items;
    if (value.is_array()) {
      for (const json& item : value) items.push_back(&item);
    } else if (value.is_object()) {
      items.push_back(&value);
    } else if (value.is_null()) {
      continue;
    } else {
      return Bad(fmt::format("'{}' is neither an object nor an array", kind));
    }
    for (const json* item : items) {
      if (!item->is_object()) return Bad(fmt::format("an element of '{}' is not an object", kind));
      if (kind == "data_change_record") {
        GCP_ASSIGN_OR_RETURN(DataChangeRecord r, ParseDataChange(*item, partition_token));
        out.emplace_back(std::move(r));
      } else if (kind == "heartbeat_record") {
        GCP_ASSIGN_OR_RETURN(absl::Time t, Time(*item, "timestamp"));
        out.emplace_back(HeartbeatRecord{t});
      } else if (kind == "child_partitions_record") {
        GCP_ASSIGN_OR_RETURN(ChildPartitionsRecord r, ParseChildren(*item));
        out.emplace_back(std::move(r));
      }
    }
  }
  // Other kinds (the partition events of other partition modes) are not ours to read.
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ChangeStreamRecord>> ParseChangeStreamRow(
    const sp::StructType& row_type, const std::vector<google::protobuf::Value>& values,
    const std::string& partition_token) {
  std::vector<ChangeStreamRecord> out;
  if (values.size() != 1 || row_type.fields_size() != 1) {
    return Bad(fmt::format("a row of {} columns (expected one)", values.size()));
  }
  const sp::Type& type = row_type.fields(0).type();
  GCP_ASSIGN_OR_RETURN(json converted, ToJson(type, values[0]));
  if (converted.is_array()) {
    for (const json& element : converted) {
      GCP_RETURN_IF_ERROR(ParseChangeStreamJson(element, partition_token, out));
    }
  } else if (!converted.is_null()) {
    GCP_RETURN_IF_ERROR(ParseChangeStreamJson(converted, partition_token, out));
  }
  return out;
}

}  // namespace gcpstream::spanner
