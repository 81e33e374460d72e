// Reassembling ReadChangeStream DataChange messages into mutations (v2 reference:
// ReadChangeStreamResponse.DataChange and MutationChunk.ChunkInfo), and the entry filters.
#include "gcpstream/bigtable/changestream/change_stream_assembler.h"

#include <gtest/gtest.h>

#include "gcpstream/bigtable/changestream/change_stream_entry_filter.h"

namespace gcpstream::bigtable {
namespace {

namespace v2 = google::bigtable::v2;
using DataChange = v2::ReadChangeStreamResponse::DataChange;

v2::Mutation Set(const std::string& family, const std::string& qualifier, std::string value) {
  v2::Mutation m;
  auto* c = m.mutable_set_cell();
  c->set_family_name(family);
  c->set_column_qualifier(qualifier);
  c->set_timestamp_micros(5000);
  c->set_value(std::move(value));
  return m;
}

DataChange First(const std::string& row) {
  DataChange d;
  d.set_type(DataChange::USER);
  d.set_row_key(row);
  d.set_source_cluster_id("c1");
  d.mutable_commit_timestamp()->set_seconds(1'700'000'000);
  d.set_tiebreaker(7);
  return d;
}

void Chunk(DataChange& d, const std::string& value, int size, int offset, bool last) {
  auto* chunk = d.add_chunks();
  *chunk->mutable_mutation() = Set("f", "q", value);
  chunk->mutable_chunk_info()->set_chunked_value_size(size);
  chunk->mutable_chunk_info()->set_chunked_value_offset(offset);
  chunk->mutable_chunk_info()->set_last_chunk(last);
}

TEST(ChangeStreamAssemblerTest, OneMessageMakesOneMutationWithEveryField) {
  ChangeStreamAssembler assembler;
  DataChange d = First("row");
  *d.add_chunks()->mutable_mutation() = Set("f", "q", "v");
  v2::Mutation del;
  del.mutable_delete_from_family()->set_family_name("g");
  *d.add_chunks()->mutable_mutation() = del;
  v2::Mutation add;
  add.mutable_add_to_cell()->set_family_name("sum");
  add.mutable_add_to_cell()->mutable_column_qualifier()->set_raw_value("n");
  add.mutable_add_to_cell()->mutable_timestamp()->set_raw_timestamp_micros(1000);
  add.mutable_add_to_cell()->mutable_input()->set_int_value(3);
  *d.add_chunks()->mutable_mutation() = add;
  d.set_done(true);
  d.set_token("tok");
  d.mutable_estimated_low_watermark()->set_seconds(1'699'999'999);
  auto m = assembler.add(d);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(m->has_value());
  const auto& mutation = **m;
  EXPECT_EQ(mutation.row_key(), "row");
  EXPECT_EQ(mutation.type(), ChangeStreamMutationType::kUser);
  EXPECT_EQ(mutation.source_cluster(), "c1");
  EXPECT_EQ(mutation.tiebreaker(), 7);
  EXPECT_EQ(mutation.token(), "tok");
  EXPECT_EQ(mutation.commit_timestamp(), absl::FromUnixSeconds(1'700'000'000));
  EXPECT_EQ(mutation.estimated_low_watermark(), absl::FromUnixSeconds(1'699'999'999));
  ASSERT_EQ(mutation.entries().size(), 3u);
  EXPECT_EQ(KindOf(mutation.entries()[0]), EntryKind::kSetCell);
  EXPECT_EQ(mutation.entries()[1], ChangeStreamEntry(DeleteFamilyEntry{"g"}));
  const auto& sum = std::get<AddToCellEntry>(mutation.entries()[2]);
  EXPECT_EQ(sum.qualifier, "n");
  EXPECT_EQ(sum.timestamp_micros, 1000);
  EXPECT_EQ(sum.input.get_type(), ChangeStreamValue::Type::kInt64);
  EXPECT_EQ(sum.input.int_value, 3);
  EXPECT_FALSE(assembler.in_progress());
}

TEST(ChangeStreamAssemblerTest, ChunkedValuesAcrossContinuationMessagesAreConcatenated) {
  ChangeStreamAssembler assembler;
  DataChange a = First("row");
  Chunk(a, "0123", 10, 0, false);
  DataChange b;
  b.set_type(DataChange::CONTINUATION);
  Chunk(b, "4567", 10, 4, false);
  DataChange c;
  c.set_type(DataChange::CONTINUATION);
  Chunk(c, "89", 10, 8, true);
  *c.add_chunks()->mutable_mutation() = Set("f", "other", "x");
  c.set_done(true);
  ASSERT_FALSE(assembler.add(a)->has_value());
  EXPECT_TRUE(assembler.in_progress());
  ASSERT_FALSE(assembler.add(b)->has_value());
  auto m = assembler.add(c);
  ASSERT_TRUE(m.ok() && m->has_value()) << m.status();
  ASSERT_EQ((*m)->entries().size(), 2u);
  EXPECT_EQ(std::get<SetCellEntry>((*m)->entries()[0]).value, "0123456789");
  EXPECT_EQ(std::get<SetCellEntry>((*m)->entries()[1]).value, "x");
}

TEST(ChangeStreamAssemblerTest, ProtocolViolationsAreErrorsNotGuesses) {
  {
    ChangeStreamAssembler assembler;
    DataChange orphan;
    orphan.set_type(DataChange::CONTINUATION);
    EXPECT_EQ(assembler.add(orphan).status().code(), absl::StatusCode::kInternal);
  }
  {
    ChangeStreamAssembler assembler;
    DataChange a = First("row");
    Chunk(a, "0123", 10, 0, false);
    ASSERT_TRUE(assembler.add(a).ok());
    DataChange gap;
    gap.set_type(DataChange::CONTINUATION);
    Chunk(gap, "89", 10, 8, true);
    EXPECT_EQ(assembler.add(gap).status().code(), absl::StatusCode::kInternal);
    EXPECT_FALSE(assembler.in_progress()) << "a broken change is dropped whole";
  }
  {
    ChangeStreamAssembler assembler;
    DataChange shortv = First("row");
    Chunk(shortv, "01", 10, 0, true);
    EXPECT_EQ(assembler.add(shortv).status().code(), absl::StatusCode::kInternal);
  }
  {
    ChangeStreamAssembler assembler;
    DataChange a = First("row");
    ASSERT_TRUE(assembler.add(a).ok());
    EXPECT_EQ(assembler.add(First("other")).status().code(), absl::StatusCode::kInternal);
  }
}

BigtableChangeStreamMutation Mutation(std::vector<ChangeStreamEntry> entries) {
  return BigtableChangeStreamMutation("r", ChangeStreamMutationType::kUser, "c", absl::UnixEpoch(),
                                      0, "t", absl::UnixEpoch(), std::move(entries));
}

TEST(ChangeStreamEntryFilterTest, FamilyAndQualifierFiltersComposeAndKeepOrder) {
  ChangeStreamEntryFilterOptions options;
  options.family_exclude = {"audit"};
  options.qualifier_include = {"orders:.*", "audit:.*"};
  auto filter = ChangeStreamEntryFilter::Create(options);
  ASSERT_TRUE(filter.ok()) << filter.status();
  std::optional<BigtableChangeStreamMutation> m = Mutation({
      SetCellEntry{"orders", "a", 0, "1"},
      SetCellEntry{"audit", "b", 0, "2"},
      DeleteFamilyEntry{"orders"},  // no qualifier: only the family filter applies
      SetCellEntry{"other", "c", 0, "3"},
      DeleteCellsEntry{"orders", "temporary", 0, 0},
  });
  const auto outcome = (*filter)->apply(m);
  EXPECT_EQ(outcome.entries_removed, 2);
  EXPECT_FALSE(outcome.skip);
  ASSERT_EQ(m->entries().size(), 3u);
  EXPECT_EQ(KindOf(m->entries()[0]), EntryKind::kSetCell);
  EXPECT_EQ(KindOf(m->entries()[1]), EntryKind::kDeleteFamily);
  EXPECT_EQ(KindOf(m->entries()[2]), EntryKind::kDeleteCells);
}

TEST(ChangeStreamEntryFilterTest, QualifiersMatchAsPaddedBase64AndWholeNamesOnly) {
  ChangeStreamEntryFilterOptions options;
  options.qualifier_exclude = {"orders:dGVtcG9yYXJ5"};  // "temporary"
  options.skip_messages_without_change = true;
  auto filter = ChangeStreamEntryFilter::Create(options);
  ASSERT_TRUE(filter.ok());
  std::optional<BigtableChangeStreamMutation> gone =
      Mutation({SetCellEntry{"orders", "temporary", 0, "x"}});
  EXPECT_TRUE((*filter)->apply(gone).skip);
  std::optional<BigtableChangeStreamMutation> kept =
      Mutation({SetCellEntry{"orders", "temporary2", 0, "x"}});
  EXPECT_EQ((*filter)->apply(kept).entries_removed, 0);
}

TEST(ChangeStreamEntryFilterTest, IncludeWithExcludeAndBadPatternsAreRefused) {
  ChangeStreamEntryFilterOptions both;
  both.family_include = {"a"};
  both.family_exclude = {"b"};
  auto refused = ChangeStreamEntryFilter::Create(both);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("family_include_list"), std::string::npos);
  ChangeStreamEntryFilterOptions bad;
  bad.qualifier_include = {"("};
  EXPECT_EQ(ChangeStreamEntryFilter::Create(bad).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gcpstream::bigtable
