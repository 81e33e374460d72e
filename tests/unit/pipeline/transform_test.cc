// The transform's building blocks: templates, cell timestamps, filters and the two mappings.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/pipeline/bigtable_row_mapper.h"
#include "gcpstream/pipeline/cell_timestamp.h"
#include "gcpstream/pipeline/pubsub_message_mapper.h"
#include "gcpstream/pipeline/record_filter.h"
#include "gcpstream/pipeline/record_template.h"

namespace gcpstream::pipeline {
namespace {

using ::testing::HasSubstr;

PipelineRecord Flight() {
  PipelineRecord r;
  r.fields = nlohmann::json::parse(
      R"({"date":"2001/01/14 21:55","delay":-3,"distance":1750,"origin":"DTW","destination":"LAS"})");
  r.attributes["seq"] = "41";
  return r;
}

TEST(RecordTemplate, RendersFieldsThenAttributes) {
  auto t = RecordTemplate::parse("{origin}#{date}#{seq}");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t->render(Flight()), "DTW#2001/01/14 21:55#41");
  EXPECT_EQ(t->names(), (std::vector<std::string>{"origin", "date", "seq"}));
  // Numbers print in their JSON spelling; a field wins over an attribute of the same name.
  PipelineRecord r = Flight();
  r.attributes["delay"] = "attr";
  EXPECT_EQ(*RecordTemplate::parse("{delay}/{distance}")->render(r), "-3/1750");
}

TEST(RecordTemplate, EscapedBracesAreLiteral) {
  EXPECT_EQ(*RecordTemplate::parse("{{x}}-{origin}")->render(Flight()), "{x}-DTW");
}

TEST(RecordTemplate, MissingNameFailsNamingIt) {
  auto s = RecordTemplate::parse("{origin}#{gate}")->render(Flight());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("'gate'"));
}

TEST(RecordTemplate, MalformedTemplatesAreRejected) {
  EXPECT_FALSE(RecordTemplate::parse("{origin").ok());
  EXPECT_FALSE(RecordTemplate::parse("origin}").ok());
  EXPECT_FALSE(RecordTemplate::parse("{}").ok());
}

TEST(CellTimestamp, ParsesTheFlightDateFormatAsUtc) {
  TimestampSpec spec;
  spec.field = "date";
  spec.format = "%Y/%m/%d %H:%M";
  auto us = CellTimestampMicros(spec, Flight());
  ASSERT_TRUE(us.ok()) << us.status();
  // 2001-01-14T21:55:00Z
  EXPECT_EQ(*us, 979509300000000);
  EXPECT_EQ(*us % 1000, 0);
  spec.utc_offset = *ParseUtcOffset("+02:00");
  EXPECT_EQ(*CellTimestampMicros(spec, Flight()), 979509300000000 - 7200000000LL);
}

TEST(CellTimestamp, NumbersInEachUnitBecomeWholeMilliseconds) {
  PipelineRecord r;
  r.fields = {{"ts", 1234567}};
  TimestampSpec spec;
  spec.field = "ts";
  spec.unit = TimestampSpec::Unit::kSeconds;
  EXPECT_EQ(*CellTimestampMicros(spec, r), 1234567000000);
  spec.unit = TimestampSpec::Unit::kMillis;
  EXPECT_EQ(*CellTimestampMicros(spec, r), 1234567000);
  spec.unit = TimestampSpec::Unit::kMicros;
  EXPECT_EQ(*CellTimestampMicros(spec, r), 1234000);  // truncated to a millisecond
  r.fields["ts"] = "1500";
  spec.unit = TimestampSpec::Unit::kMillis;
  EXPECT_EQ(*CellTimestampMicros(spec, r), 1500000);
}

TEST(CellTimestamp, ErrorsNameTheField) {
  TimestampSpec spec;
  spec.field = "date";
  spec.format = "%Y-%m-%d";
  auto s = CellTimestampMicros(spec, Flight());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("'date'"));
  spec.field = "when";
  EXPECT_THAT(std::string(CellTimestampMicros(spec, Flight()).status().message()),
              HasSubstr("'when'"));
  EXPECT_FALSE(ParseUtcOffset("2h").ok());
}

TEST(RecordFilter, ComparesNumbersNumericallyAndTextAsText) {
  const PipelineRecord r = Flight();
  auto cmp = [](std::string field, FieldComparison::Op op, nlohmann::json v) {
    return FieldComparison{std::move(field), op, std::move(v)};
  };
  using Op = FieldComparison::Op;
  EXPECT_TRUE(Holds(cmp("delay", Op::kLt, 0), r));
  EXPECT_FALSE(Holds(cmp("delay", Op::kGe, 0), r));
  EXPECT_TRUE(Holds(cmp("distance", Op::kGt, 999), r));  // 1750 > 999 numerically
  EXPECT_TRUE(Holds(cmp("origin", Op::kEq, "DTW"), r));
  EXPECT_TRUE(Holds(cmp("origin", Op::kLt, "EWR"), r));
  EXPECT_TRUE(Holds(cmp("seq", Op::kEq, 41), r));  // attribute text read as a number
  EXPECT_TRUE(Holds(cmp("gate", Op::kNotExists, nullptr), r));
  EXPECT_FALSE(Holds(cmp("gate", Op::kEq, "A1"), r));
  EXPECT_TRUE(Holds(cmp("gate", Op::kNe, "A1"), r));
  EXPECT_TRUE(Holds(cmp("origin", Op::kExists, nullptr), r));

  TransformSpec t;
  t.keep.push_back(cmp("distance", Op::kGe, 1000));
  t.drop.push_back(cmp("origin", Op::kEq, "LAX"));
  EXPECT_TRUE(Passes(t, r));
  PipelineRecord lax = r;
  lax.fields["origin"] = "LAX";
  EXPECT_FALSE(Passes(t, lax));
  PipelineRecord short_hop = r;
  short_hop.fields["distance"] = 200;
  EXPECT_FALSE(Passes(t, short_hop));
}

TEST(BigtableRowMapper, BuildsTheRowWithTheFlightTimeOnEveryCell) {
  BigtableMappingSpec spec;
  spec.row_key = "{origin}#{date}#{seq}";
  spec.family = "f";
  spec.columns = {{"delay", "{delay}"}, {"destination", "{destination}"}};
  spec.timestamp = TimestampSpec{"date", "%Y/%m/%d %H:%M", TimestampSpec::Unit::kMillis, {}};
  auto mapper = BigtableRowMapper::make(spec);
  ASSERT_TRUE(mapper.ok()) << mapper.status();
  auto entry = mapper->map(Flight());
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->row_key(), "DTW#2001/01/14 21:55#41");
  EXPECT_EQ(entry->mutation_count(), 2);
  PipelineRecord no_dest = Flight();
  no_dest.fields.erase("destination");
  EXPECT_FALSE(mapper->map(no_dest).ok());
  spec.skip_missing_fields = true;
  EXPECT_EQ(BigtableRowMapper::make(spec)->map(no_dest)->mutation_count(), 1);
}

TEST(PubSubMessageMapper, DataAttributesAndOrderingKey) {
  PubSubMappingSpec spec;
  spec.attributes = {{"origin", "{origin}"}};
  spec.ordering_key = "{origin}";
  auto message = PubSubMessageMapper::make(spec)->map(Flight());
  ASSERT_TRUE(message.ok()) << message.status();
  EXPECT_EQ(nlohmann::json::parse(message->data()), Flight().fields);
  EXPECT_EQ(message->attributes().at("seq"), "41");
  EXPECT_EQ(message->attributes().at("origin"), "DTW");
  EXPECT_EQ(message->ordering_key(), "DTW");
  spec.data_field = "destination";
  spec.include_record_attributes = false;
  message = PubSubMessageMapper::make(spec)->map(Flight());
  EXPECT_EQ(message->data(), "LAS");
  EXPECT_EQ(message->attributes().count("seq"), 0u);
}

}  // namespace
}  // namespace gcpstream::pipeline
