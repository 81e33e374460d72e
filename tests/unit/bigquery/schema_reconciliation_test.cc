// ReconcileSchema: what an existing table becomes so the rows fit, under each
// SchemaUpdateOptions switch (../shared/spec/bigquery.md, "Nullability and reconciliation";
// the widening changes https://cloud.google.com/bigquery/docs/managing-table-schemas allows).
#include "gcpstream/bigquery/schema/schema_reconciliation.h"

#include <gtest/gtest.h>

namespace gcpstream::bigquery {
namespace {

TableSchema Parse(const char* json) { return *TableSchemaFromJson(nlohmann::json::parse(json)); }

const char* kLive = R"([
  {"name": "id", "type": "INT64", "mode": "REQUIRED"},
  {"name": "note", "type": "STRING", "mode": "REQUIRED"},
  {"name": "route", "type": "RECORD", "fields": [{"name": "from", "type": "STRING"}]}])";
const char* kDesired = R"([
  {"name": "ID", "type": "INT64", "mode": "REQUIRED"},
  {"name": "delay", "type": "INT64", "mode": "REQUIRED"},
  {"name": "tags", "type": "STRING", "mode": "REPEATED"},
  {"name": "route", "type": "RECORD", "fields": [
    {"name": "from", "type": "STRING"}, {"name": "to", "type": "STRING"}]}])";

TEST(ReconcileSchemaTest, NothingChangesWithoutAnOption) {
  auto out = ReconcileSchema(Parse(kLive), Parse(kDesired), {});
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->has_value());
}

TEST(ReconcileSchemaTest, NewFieldsAreAddedNullableAtEveryDepthAndNothingElseChanges) {
  auto out = ReconcileSchema(Parse(kLive), Parse(kDesired), {.allow_new_fields = true});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(out->has_value());
  const TableSchema& s = **out;
  ASSERT_EQ(s.fields.size(), 5u);
  EXPECT_EQ(s.fields[0].name, "id") << "matched case-insensitively, the table's name kept";
  EXPECT_EQ(s.fields[1].mode, FieldMode::kRequired) << "no relaxation without its option";
  EXPECT_EQ(s.fields[3].name, "delay");
  EXPECT_EQ(s.fields[3].mode, FieldMode::kNullable) << "a REQUIRED column is added NULLABLE";
  EXPECT_EQ(s.fields[4].name, "tags");
  EXPECT_EQ(s.fields[4].mode, FieldMode::kRepeated);
  ASSERT_EQ(s.fields[2].fields.size(), 2u);
  EXPECT_EQ(s.fields[2].fields[1].name, "to");
}

TEST(ReconcileSchemaTest, RelaxationLoosensOnlyRequiredColumnsTheRowsDoNotRequire) {
  auto out = ReconcileSchema(Parse(kLive), Parse(kDesired), {.allow_field_relaxation = true});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(out->has_value());
  EXPECT_EQ((*out)->fields[0].mode, FieldMode::kRequired) << "the rows require it too";
  EXPECT_EQ((*out)->fields[1].mode, FieldMode::kNullable) << "the rows omit it";
  EXPECT_EQ((*out)->fields.size(), 3u) << "nothing added without allow_new_fields";
  // A NULLABLE table column the rows declare REQUIRED is never tightened.
  auto tight = ReconcileSchema(Parse(R"([{"name": "a", "type": "STRING"}])"),
                               Parse(R"([{"name": "a", "type": "STRING", "mode": "REQUIRED"}])"),
                               {.allow_new_fields = true, .allow_field_relaxation = true});
  ASSERT_TRUE(tight.ok());
  EXPECT_FALSE(tight->has_value());
}

TEST(ReconcileSchemaTest, ATypeConflictCannotBeReconciled) {
  auto out = ReconcileSchema(Parse(R"([{"name": "route", "type": "STRING"}])"), Parse(kDesired),
                             {.allow_new_fields = true});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(out.status().message()).find("route"), std::string::npos);
}

}  // namespace
}  // namespace gcpstream::bigquery
