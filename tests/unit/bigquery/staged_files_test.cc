// FILE_LOADS committables and load planning: job ids are deterministic per load (a retry
// re-attaches) and distinct between loads (no two loads ever share one), files are grouped per
// checkpoint, table and format, and a damaged committable is refused on restore.
#include "gcpstream/bigquery/sink/staged_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <re2/re2.h>

#include <set>

namespace gcpstream::bigquery {
namespace {

using ::testing::HasSubstr;

const std::string kTable = "projects/p/datasets/d/tables/t";

StagedFiles Files(std::vector<std::string> uris, std::int64_t checkpoint = 7,
                  const std::string& table = kTable) {
  StagedFiles f;
  f.table = table;
  f.uris = std::move(uris);
  f.rows = 10;
  f.bytes = 100;
  f.checkpoint_id = checkpoint;
  return f;
}

TEST(LoadJobIdTest, TheSameLoadGetsTheSameIdWhateverTheOrderOfItsFiles) {
  auto a = PlanLoads({Files({"gs://bkt/run/0-1.avro", "gs://bkt/run/1-1.avro"})});
  auto b = PlanLoads({Files({"gs://bkt/run/1-1.avro", "gs://bkt/run/0-1.avro"})});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), 1u);
  ASSERT_EQ(b->size(), 1u);
  EXPECT_EQ((*a)[0].job_id, (*b)[0].job_id);
  EXPECT_EQ((*a)[0].uris,
            (std::vector<std::string>{"gs://bkt/run/0-1.avro", "gs://bkt/run/1-1.avro"}));
  EXPECT_THAT((*a)[0].job_id, ::testing::EndsWith("-c7"));
  EXPECT_TRUE(RE2::FullMatch((*a)[0].job_id, "[A-Za-z0-9_-]+")) << (*a)[0].job_id;
  EXPECT_LE((*a)[0].job_id.size(), 1024u);
}

TEST(LoadJobIdTest, DistinctLoadsNeverShareAnId) {
  const std::vector<std::string> files = {"gs://bkt/x/0.avro", "gs://bkt/x/1.avro"};
  std::set<std::string> ids = {
      LoadJobId(kTable, "AVRO", files, 7),
      LoadJobId(kTable, "AVRO", files, 8),                  // another checkpoint
      LoadJobId(kTable, "AVRO", files, -1),                 // a bounded run's end
      LoadJobId(kTable, "PARQUET", files, 7),               // another format
      LoadJobId(kTable + "2", "AVRO", files, 7),            // another table
      LoadJobId(kTable, "AVRO", {"gs://bkt/x/0.avro"}, 7),  // fewer files
      LoadJobId(kTable, "AVRO", {"gs://bkt/x/0.avro\ngs://bkt/x/1.avro"}, 7),  // one odd name
  };
  EXPECT_EQ(ids.size(), 7u);
  EXPECT_EQ(LoadJobId(kTable, "AVRO", files, -1).find("-c"), std::string::npos);
}

TEST(PlanLoadsTest, EachCommittableIsOneLoadInCheckpointOrderAndARedeliveryCountsOnce) {
  StagedFiles parquet = Files({"gs://bkt/p.parquet"}, 8);
  parquet.format = "PARQUET";
  auto plan = PlanLoads({Files({"gs://bkt/c8-a"}, 8), Files({"gs://bkt/c7-a"}, 7),
                         Files({"gs://bkt/c8-b"}, 8), Files({"gs://bkt/u"}, 8, kTable + "u"),
                         parquet, Files({"gs://bkt/c7-a"}, 7)});  // re-delivered: counted once
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 5u);
  EXPECT_EQ((*plan)[0].checkpoint_id, 7);
  EXPECT_EQ((*plan)[0].rows, 10);
  EXPECT_EQ((*plan)[1].uris, (std::vector<std::string>{"gs://bkt/c8-a"}));
  EXPECT_EQ((*plan)[2].uris, (std::vector<std::string>{"gs://bkt/c8-b"}))
      << "two writers' files of one checkpoint are two loads";
  EXPECT_EQ((*plan)[3].format, "PARQUET");
  EXPECT_EQ((*plan)[4].table, kTable + "u");
  // A restore at another parallelism hands both committables to one committer: the same two
  // loads, with the same ids, as the two committers made.
  auto alone_a = PlanLoads({Files({"gs://bkt/c8-a"}, 8)});
  auto alone_b = PlanLoads({Files({"gs://bkt/c8-b"}, 8)});
  ASSERT_TRUE(alone_a.ok() && alone_b.ok());
  EXPECT_EQ((*alone_a)[0].job_id, (*plan)[1].job_id);
  EXPECT_EQ((*alone_b)[0].job_id, (*plan)[2].job_id);
  // The end of a bounded input loads after every checkpoint.
  auto ordered = PlanLoads({Files({"gs://bkt/end"}, -1), Files({"gs://bkt/c3"}, 3)});
  ASSERT_TRUE(ordered.ok());
  EXPECT_EQ((*ordered)[0].checkpoint_id, 3);
  EXPECT_EQ((*ordered)[1].checkpoint_id, -1);
  std::set<std::string> ids;
  for (const auto& load : *plan) ids.insert(load.job_id);
  EXPECT_EQ(ids.size(), 5u);
}

TEST(TableResourceNameTest, OnlyTheFullTableNameSplits) {
  auto t = connector::BigQueryTableDestination::parse("projects/p/datasets/d/tables/t");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->project, "p");
  EXPECT_EQ(t->dataset, "d");
  EXPECT_EQ(t->table, "t");
  for (const char* bad : {"projects/p/tables/t/datasets/d", "projects//datasets/d/tables/t",
                          "projects/p/datasets/d/tables/", "projects/p/datasets/d/tables/t/x",
                          "p/datasets/d/tables/t", ""}) {
    EXPECT_FALSE(connector::BigQueryTableDestination::parse(bad).has_value()) << bad;
    EXPECT_EQ(PlanLoads({Files({"gs://bkt/a"}, 1, bad)}).status().code(),
              absl::StatusCode::kInvalidArgument)
        << "a committable whose table the committer could not address is refused: " << bad;
  }
}

TEST(PlanLoadsTest, WhatNoLoadJobCanTakeIsRefused) {
  EXPECT_EQ(PlanLoads({Files({})}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanLoads({Files({"/tmp/x.avro"})}).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<std::string> many;
  for (int i = 0; i <= 10000; ++i) many.push_back("gs://bkt/f" + std::to_string(i));
  auto over = PlanLoads({Files(many)});
  EXPECT_EQ(over.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(over.status().message()), HasSubstr("10000"));
  many.pop_back();
  EXPECT_TRUE(PlanLoads({Files(many)}).ok()) << "10,000 URIs fit one job";
}

TEST(StagedFilesSerializerTest, RoundTripsAndRefusesDamage) {
  StagedFilesSerializer s;
  const StagedFiles f = Files({"gs://bkt/a", "gs://bkt/b"});
  auto bytes = s.serialize(f);
  ASSERT_TRUE(bytes.ok());
  auto back = s.deserialize(1, *bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, f);
  EXPECT_EQ(s.deserialize(2, *bytes).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(s.deserialize(1, bytes->substr(0, bytes->size() - 1)).ok());
  EXPECT_FALSE(s.deserialize(1, *bytes + "x").ok());
  // What a restore could not take back is refused when it is written, and when it is read.
  EXPECT_EQ(s.serialize(Files({"not-a-uri"})).status().code(), absl::StatusCode::kInternal);
  StagedFiles negative = f;
  negative.rows = -1;
  EXPECT_EQ(s.serialize(negative).status().code(), absl::StatusCode::kInternal);
  std::string corrupt = *bytes;
  corrupt[corrupt.find("gs://bkt/a")] = 'x';  // "xs://b/a"
  EXPECT_EQ(s.deserialize(1, corrupt).status().code(), absl::StatusCode::kDataLoss);
  // A count far beyond what the bytes hold is refused without allocating for it.
  std::string huge = *s.serialize(f);
  const std::size_t count_at = 4 + kTable.size() + 4 + 4;  // after table and format
  huge[count_at] = huge[count_at + 1] = huge[count_at + 2] = huge[count_at + 3] = '\xff';
  EXPECT_FALSE(s.deserialize(1, huge).ok());
}

}  // namespace
}  // namespace gcpstream::bigquery
