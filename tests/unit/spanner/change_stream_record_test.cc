// Parsing change-stream records in both dialects (Spanner "Change streams partitions, records
// and queries": the GoogleSQL READ_<stream> function returns ARRAY<STRUCT<data_change_record,
// heartbeat_record, child_partitions_record>>, the PostgreSQL spanner.read_json_<stream>
// function one JSONB object per record), and the output filters of the spec's Change Streams
// source ("Output filters").
#include "gcpstream/spanner/changestream/change_stream_record.h"

#include <gmock/gmock.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "gcpstream/spanner/changestream/change_stream_filter.h"
#include "gcpstream/spanner/client/value.h"

namespace gcpstream::spanner {
namespace {

namespace sp = google::spanner::v1;
using ::testing::HasSubstr;

// What the PostgreSQL function returned on the emulator for one insert (column j is JSONB).
constexpr char kPgData[] = R"({"data_change_record":{"column_types":[
  {"is_primary_key":true,"name":"k","ordinal_position":1,"type":{"code":"INT64"}},
  {"is_primary_key":false,"name":"v","ordinal_position":2,"type":{"code":"STRING"}},
  {"is_primary_key":false,"name":"a","ordinal_position":3,
   "type":{"code":"ARRAY","array_element_type":{"code":"INT64"}}}],
  "commit_timestamp":"2026-12-02T06:07:44.1588+00:00",
  "is_last_record_in_transaction_in_partition":true,"is_system_transaction":false,
  "mod_type":"UPDATE","mods":[{"keys":{"k":"1"},"new_values":{"v":"a","a":null},
  "old_values":{"v":"z","a":["1"]}}],"number_of_partitions_in_transaction":1,
  "number_of_records_in_transaction":2,"record_sequence":"00000000","server_transaction_id":"7",
  "table_name":"t","transaction_tag":"tag","value_capture_type":"OLD_AND_NEW_VALUES"}})";

DataChangeRecord ParsePg(const char* text) {
  std::vector<ChangeStreamRecord> out;
  sp::StructType row_type;
  auto* field = row_type.add_fields();
  field->set_name("read_json_s");
  field->mutable_type()->set_code(sp::JSON);
  std::vector<google::protobuf::Value> values(1);
  values[0].set_string_value(text);
  auto records = ParseChangeStreamRow(row_type, values, "tok");
  EXPECT_TRUE(records.ok()) << records.status();
  EXPECT_EQ(records->size(), 1u);
  return std::get<DataChangeRecord>(records->at(0));
}

TEST(ChangeStreamRecordTest, PostgreSqlDataChangeRecordIsNormalized) {
  DataChangeRecord r = ParsePg(kPgData);
  EXPECT_EQ(r.partition_token, "tok");
  EXPECT_EQ(r.table_name, "t");
  EXPECT_EQ(r.mod_type, "UPDATE");
  EXPECT_EQ(r.number_of_records_in_transaction, 2);
  EXPECT_EQ(r.transaction_tag, "tag");
  EXPECT_EQ(FormatTimestamp(r.commit_timestamp), "2026-12-02T06:07:44.1588Z");
  ASSERT_EQ(r.column_types.size(), 3u);
  // Kept whole, members sorted.
  EXPECT_EQ(r.column_types[2].type_json,
            R"({"array_element_type":{"code":"INT64"},"code":"ARRAY"})");
  EXPECT_TRUE(r.column_types[0].is_primary_key);
  EXPECT_EQ(r.column_types[2].ordinal_position, 3);
  ASSERT_EQ(r.mods.size(), 1u);
  EXPECT_EQ(*r.mods[0].keys, R"({"k":"1"})");
  // JSON null stays a member; members sorted.
  EXPECT_EQ(*r.mods[0].new_values, R"({"a":null,"v":"a"})");
  EXPECT_EQ(*r.mods[0].old_values, R"({"a":["1"],"v":"z"})");
}

TEST(ChangeStreamRecordTest, AHalfPresentAsJsonNullIsNullNotAbsent) {
  std::string text = kPgData;
  const std::string old_part = R"("old_values":{"v":"z","a":["1"]})";
  ASSERT_NE(text.find(old_part), std::string::npos);
  text.replace(text.find(old_part), old_part.size(), R"("old_values":null)");
  DataChangeRecord r = ParsePg(text.c_str());
  ASSERT_TRUE(r.mods[0].old_values.has_value());
  EXPECT_EQ(*r.mods[0].old_values, "null");
}

TEST(ChangeStreamRecordTest, AnOmittedHalfIsAbsentNotNull) {
  std::string text = kPgData;
  const std::string old_part = R"(,
  "old_values":{"v":"z","a":["1"]})";
  ASSERT_NE(text.find(old_part), std::string::npos);
  text.erase(text.find(old_part), old_part.size());
  DataChangeRecord r = ParsePg(text.c_str());
  EXPECT_FALSE(r.mods[0].old_values.has_value());
  EXPECT_TRUE(r.mods[0].new_values.has_value());
}

// The GoogleSQL shape, as the emulator returned it for one insert (taken from a REST capture).
TEST(ChangeStreamRecordTest, GoogleSqlRowGivesTheSameRecords) {
  const char* metadata_json =
      R"({"rowType":{"fields":[{"name":"ChangeRecord","type":{"code":"ARRAY",
  "arrayElementType":{"code":"STRUCT","structType":{"fields":[
   {"name":"data_change_record","type":{"code":"ARRAY","arrayElementType":{"code":"STRUCT","structType":{"fields":[
     {"name":"commit_timestamp","type":{"code":"TIMESTAMP"}},{"name":"record_sequence","type":{"code":"STRING"}},
     {"name":"server_transaction_id","type":{"code":"STRING"}},
     {"name":"is_last_record_in_transaction_in_partition","type":{"code":"BOOL"}},
     {"name":"table_name","type":{"code":"STRING"}},
     {"name":"column_types","type":{"code":"ARRAY","arrayElementType":{"code":"STRUCT","structType":{"fields":[
       {"name":"name","type":{"code":"STRING"}},{"name":"type","type":{"code":"JSON"}},
       {"name":"is_primary_key","type":{"code":"BOOL"}},{"name":"ordinal_position","type":{"code":"INT64"}}]}}}},
     {"name":"mods","type":{"code":"ARRAY","arrayElementType":{"code":"STRUCT","structType":{"fields":[
       {"name":"keys","type":{"code":"JSON"}},{"name":"new_values","type":{"code":"JSON"}},
       {"name":"old_values","type":{"code":"JSON"}}]}}}},
     {"name":"mod_type","type":{"code":"STRING"}},{"name":"value_capture_type","type":{"code":"STRING"}},
     {"name":"number_of_records_in_transaction","type":{"code":"INT64"}},
     {"name":"number_of_partitions_in_transaction","type":{"code":"INT64"}},
     {"name":"transaction_tag","type":{"code":"STRING"}},{"name":"is_system_transaction","type":{"code":"BOOL"}}]}}}},
   {"name":"heartbeat_record","type":{"code":"ARRAY","arrayElementType":{"code":"STRUCT","structType":{"fields":[
     {"name":"timestamp","type":{"code":"TIMESTAMP"}}]}}}},
   {"name":"child_partitions_record","type":{"code":"ARRAY","arrayElementType":{"code":"STRUCT","structType":{"fields":[
     {"name":"start_timestamp","type":{"code":"TIMESTAMP"}},{"name":"record_sequence","type":{"code":"STRING"}},
     {"name":"child_partitions","type":{"code":"ARRAY","arrayElementType":{"code":"STRUCT","structType":{"fields":[
       {"name":"token","type":{"code":"STRING"}},
       {"name":"parent_partition_tokens","type":{"code":"ARRAY","arrayElementType":{"code":"STRING"}}}]}}}}]}}}}]}}}}]}})";
  const char* value_json = R"([
    [[["2026-12-02T06:05:31.195636Z","00000000","1",true,"T",
       [["K","{\"code\":\"INT64\"}",true,"1"],["V","{\"code\":\"STRING\"}",false,"2"]],
       [["{\"K\":\"1\"}","{\"V\":\"a\"}","{}"],["{\"K\":\"2\"}","{\"V\":null}",null]],
       "INSERT","OLD_AND_NEW_VALUES","2","1","",false]],
     [["2026-12-02T06:05:42.485455Z"]],
     [["2026-12-02T06:05:30Z","00000001",[["tokA",[]],["tokB",["p1","p2"]]]]]]])";
  sp::ResultSetMetadata metadata;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(metadata_json, &metadata).ok());
  google::protobuf::Value value;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(value_json, &value).ok());
  auto records = ParseChangeStreamRow(metadata.row_type(), {value}, "");
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 3u);
  const auto& d = std::get<DataChangeRecord>(records->at(0));
  EXPECT_EQ(d.table_name, "T");
  EXPECT_EQ(d.number_of_records_in_transaction, 2);
  EXPECT_EQ(d.server_transaction_id, "1");
  ASSERT_EQ(d.mods.size(), 2u);
  EXPECT_EQ(*d.mods[0].new_values, R"({"V":"a"})");
  EXPECT_EQ(*d.mods[0].old_values, "{}");
  EXPECT_EQ(*d.mods[1].new_values, R"({"V":null})");
  EXPECT_FALSE(d.mods[1].old_values.has_value()) << "SQL NULL is an absent member";
  EXPECT_EQ(d.column_types[1].type_json, R"({"code":"STRING"})");
  const auto& h = std::get<HeartbeatRecord>(records->at(1));
  EXPECT_EQ(FormatTimestamp(h.timestamp), "2026-12-02T06:05:42.485455Z");
  const auto& c = std::get<ChildPartitionsRecord>(records->at(2));
  ASSERT_EQ(c.children.size(), 2u);
  EXPECT_EQ(c.children[1].token, "tokB");
  EXPECT_EQ(c.children[1].parent_tokens, (std::vector<std::string>{"p1", "p2"}));
}

TEST(ChangeStreamRecordTest, MalformedRecordsAreRefusedByName) {
  std::vector<ChangeStreamRecord> out;
  auto parse = [&](const char* text) {
    out.clear();
    return ParseChangeStreamJson(nlohmann::json::parse(text), "", out);
  };
  EXPECT_THAT(parse(R"({"heartbeat_record":{"timestamp":"yesterday"}})").message(),
              HasSubstr("timestamp"));
  EXPECT_EQ(parse(R"({"heartbeat_record":{}})").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parse(R"({"child_partitions_record":{"start_timestamp":"2026-01-01T00:00:00Z",
      "record_sequence":"1","child_partitions":[{"token":"","parent_partition_tokens":[]}]}})")
                  .message(),
              HasSubstr("without a token"));
  EXPECT_EQ(parse(R"({"data_change_record":5})").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parse(R"({"child_partitions_record":{"start_timestamp":"2026-01-01T00:00:00Z",
      "record_sequence":"1","child_partitions":[]}})")
                  .message(),
              HasSubstr("non-empty"))
      << "an empty child list would leave a key range unread";
  EXPECT_EQ(parse(R"([1,2])").code(), absl::StatusCode::kInvalidArgument);
  // A kind from a newer service is skipped, not an error.
  EXPECT_TRUE(parse(R"({"partition_event_record":{"x":1}})").ok());
  EXPECT_TRUE(out.empty());
  // Deep nesting is refused before parsing (printing it would recurse once per level and
  // overflowed the stack under AddressSanitizer at 5,000 levels).
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  EXPECT_THAT(NormalizeJson(deep).status().message(), HasSubstr("deeper than 256"));
  std::string fine(200, '[');
  fine += std::string(200, ']');
  EXPECT_TRUE(NormalizeJson(fine).ok());
  EXPECT_FALSE(NormalizeJson("{\"a\":").ok());
  EXPECT_FALSE(NormalizeJson("\"\xff\"").ok()) << "invalid UTF-8";
}

DataChangeRecord Orders() {
  DataChangeRecord r;
  r.table_name = "orders";
  r.column_types = {{"id", R"({"code":"INT64"})", true, 1},
                    {"status", R"({"code":"STRING"})", false, 2},
                    {"internal_note", R"({"code":"STRING"})", false, 3}};
  r.mods = {{R"({"id":"1"})", R"({"internal_note":null,"status":"paid"})", std::nullopt}};
  return r;
}

TEST(ChangeStreamFilterTest, TablePatternsMatchTheWholeName) {
  auto filter = ChangeStreamFilter::Create({{"orders"}, {}, {}, {}, false});
  ASSERT_TRUE(filter.ok());
  DataChangeRecord r = Orders();
  EXPECT_EQ((*filter)->apply(r)->kind, ChangeStreamFilter::Outcome::kKeep);
  r.table_name = "audit_orders";
  EXPECT_EQ((*filter)->apply(r)->kind, ChangeStreamFilter::Outcome::kDropTable)
      << "a substring match must not keep audit_orders";
}

TEST(ChangeStreamFilterTest, ColumnProjectionKeepsKeysAndCountsOccurrences) {
  auto filter = ChangeStreamFilter::Create({{}, {}, {}, {"orders\\.internal_note", "orders\\.id"}});
  ASSERT_TRUE(filter.ok());
  DataChangeRecord r = Orders();
  auto outcome = (*filter)->apply(r);
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(outcome->kind, ChangeStreamFilter::Outcome::kKeep);
  EXPECT_EQ(outcome->columns_removed, 2) << "one column type + one new-value member";
  ASSERT_EQ(r.column_types.size(), 2u);
  EXPECT_EQ(r.column_types[0].name, "id") << "primary keys always stay";
  EXPECT_EQ(*r.mods[0].new_values, R"({"status":"paid"})");
  EXPECT_FALSE(r.mods[0].old_values.has_value()) << "absent stays absent";
}

TEST(ChangeStreamFilterTest, RecordWithoutAnyProjectedValueIsSkippedOnlyWhenAsked) {
  for (bool skip : {false, true}) {
    auto filter = ChangeStreamFilter::Create({{}, {}, {"orders\\.id"}, {}, skip});
    ASSERT_TRUE(filter.ok());
    DataChangeRecord r = Orders();
    auto outcome = (*filter)->apply(r);
    ASSERT_TRUE(outcome.ok());
    EXPECT_EQ(outcome->kind, skip ? ChangeStreamFilter::Outcome::kDropNoChange
                                  : ChangeStreamFilter::Outcome::kKeep);
    if (!skip) {
      EXPECT_EQ(*r.mods[0].new_values, "{}");
    }
  }
}

TEST(ChangeStreamFilterTest, ConflictingListsAndBadPatternsAreRefused) {
  EXPECT_THAT(ChangeStreamFilter::Create({{"a"}, {"b"}, {}, {}}).status().message(),
              HasSubstr("table_include_list and table_exclude_list"));
  EXPECT_THAT(ChangeStreamFilter::Create({{}, {}, {"a"}, {"b"}}).status().message(),
              HasSubstr("column_include_list and column_exclude_list"));
  auto bad = ChangeStreamFilter::Create({{"orders("}, {}, {}, {}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("orders("));
  auto none = ChangeStreamFilter::Create({});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE((*none)->active());
}

}  // namespace
}  // namespace gcpstream::spanner
