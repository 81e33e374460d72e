// Which checkpoint `run --restore` continues from when the newest one is damaged.
#include "gcpstream/pipeline/restore_point.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gcpstream/runtime/checkpoint_storage.h"

namespace gcpstream::pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class RestorePointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / fmt::format("gcpstream-restore-point-{}", getpid());
    fs::remove_all(base_);
    checkpoints_ = base_ / "checkpoints";
    savepoints_ = DefaultSavepointDir(checkpoints_.string());
  }
  void TearDown() override { fs::remove_all(base_); }

  static std::int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  // A complete checkpoint chk-<id> of job "j" taken `age` ago.
  std::string Write(std::int64_t id, std::chrono::seconds age) {
    runtime::CompletedCheckpoint cp;
    cp.id = id;
    cp.job_id = "j";
    cp.timestamp_ms = NowMs() - std::chrono::duration_cast<std::chrono::milliseconds>(age).count();
    cp.operators["source"].parallelism = 1;
    cp.operators["source"].subtasks[0]["splits"] = {{1, std::string(64, 's')}};
    const std::string dir = (checkpoints_ / "j" / fmt::format("chk-{}", id)).string();
    EXPECT_TRUE(runtime::CheckpointStorage::write(dir, cp).ok());
    // File times say the opposite (as after a copy): what the checkpoint records decides.
    fs::last_write_time(fs::path(dir) / "_metadata", fs::file_time_type::clock::now() + age);
    return dir;
  }

  // Overwrites the middle of a state file, keeping its size (the CRC catches it).
  static void Damage(const std::string& dir) {
    const fs::path file = fs::path(dir) / "op-source-0.state";
    ASSERT_TRUE(fs::exists(file));
    std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>(fs::file_size(file) / 2));
    f.put('\x7f');
  }

  fs::path base_;
  fs::path checkpoints_;
  std::string savepoints_;
};

TEST_F(RestorePointTest, NothingToRestoreIsNotAnError) {
  auto choice = ChooseRestorePoint(checkpoints_.string(), savepoints_, false);
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_TRUE(choice->path.empty());
  EXPECT_TRUE(choice->incomplete.empty());
}

TEST_F(RestorePointTest, TheNewestReadableCheckpointIsChosen) {
  Write(3, std::chrono::seconds(60));
  const std::string newest = Write(4, std::chrono::seconds(30));
  fs::create_directories(checkpoints_ / "j" / "chk-5");  // in progress when the job died
  auto choice = ChooseRestorePoint(checkpoints_.string(), savepoints_, false);
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->path, newest);
  EXPECT_TRUE(choice->skipped.empty());
  ASSERT_EQ(choice->incomplete.size(), 1u);
  EXPECT_EQ(fs::path(choice->incomplete[0]).filename(), "chk-5");
}

// A damaged newest checkpoint fails the restore by default, naming the file and the way out;
// it is never passed over silently (restoring an older one may write records again).
TEST_F(RestorePointTest, ADamagedNewestCheckpointFailsUnlessFallbackIsAsked) {
  const std::string older = Write(3, std::chrono::seconds(60));
  const std::string newest = Write(4, std::chrono::seconds(30));
  Damage(newest);
  auto refused = ChooseRestorePoint(checkpoints_.string(), savepoints_, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("op-source-0.state"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("--restore-fallback"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr(older));

  auto fallen_back = ChooseRestorePoint(checkpoints_.string(), savepoints_, true);
  ASSERT_TRUE(fallen_back.ok()) << fallen_back.status();
  EXPECT_EQ(fallen_back->path, older);
  ASSERT_EQ(fallen_back->skipped.size(), 1u);
  EXPECT_EQ(fallen_back->skipped[0].first, newest);
  EXPECT_EQ(fallen_back->skipped[0].second.code(), absl::StatusCode::kDataLoss);
}

// A savepoint whose _metadata is gone is never chosen, and is listed so the restore says it
// passed over it (it used to restore an older checkpoint without a word).
TEST_F(RestorePointTest, ASavepointWithoutMetadataIsListedAsPassedOver) {
  const std::string checkpoint = Write(3, std::chrono::seconds(60));
  fs::create_directories(fs::path(savepoints_) / "savepoint-j-5");
  auto choice = ChooseRestorePoint(checkpoints_.string(), savepoints_, false);
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->path, checkpoint);
  ASSERT_EQ(choice->incomplete.size(), 1u);
  EXPECT_EQ(fs::path(choice->incomplete[0]).filename(), "savepoint-j-5");
}

TEST_F(RestorePointTest, ASavepointNewerThanTheCheckpointsCountsAsTheNewest) {
  Write(3, std::chrono::seconds(60));
  runtime::CompletedCheckpoint sp;
  sp.id = 4;
  sp.job_id = "j";
  sp.is_savepoint = true;
  sp.timestamp_ms = NowMs();
  const std::string savepoint = savepoints_ + "/savepoint-j-4";
  ASSERT_TRUE(runtime::CheckpointStorage::write(savepoint, sp).ok());
  auto choice = ChooseRestorePoint(checkpoints_.string(), savepoints_, false);
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->path, savepoint);
}

TEST_F(RestorePointTest, WhenNothingReadsEvenFallbackFailsNamingTheNewest) {
  Damage(Write(3, std::chrono::seconds(60)));
  const std::string newest = Write(4, std::chrono::seconds(30));
  Damage(newest);
  auto choice = ChooseRestorePoint(checkpoints_.string(), savepoints_, true);
  ASSERT_FALSE(choice.ok());
  EXPECT_EQ(choice.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(choice.status().message()), HasSubstr("none of the 2"));
  EXPECT_THAT(std::string(choice.status().message()), HasSubstr(newest));
}

TEST_F(RestorePointTest, AnEmptyMetadataFileIsCorruptNotAnOldFormat) {
  const std::string dir = Write(3, std::chrono::seconds(60));
  std::ofstream(fs::path(dir) / "_metadata", std::ios::trunc).close();
  auto read = runtime::CheckpointStorage::read(dir);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(read.status().message()), HasSubstr("_metadata is corrupt (empty)"));
}

// A checkpoint folder whose own name looks like a checkpoint ("chk-2") is still searched.
TEST_F(RestorePointTest, AFolderNamedLikeACheckpointIsSearchedNotTakenForOne) {
  checkpoints_ = base_ / "chk-2";
  const std::string inside = Write(3, std::chrono::seconds(10));
  fs::create_directories(base_ / "chk-2" / "j" / "chk-30s");  // not a checkpoint name
  auto choice = ChooseRestorePoint(checkpoints_.string(), savepoints_, false);
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->path, inside);
  EXPECT_TRUE(choice->incomplete.empty()) << choice->incomplete.front();
}

// A run that is killed leaves its marker; the next start knows its predecessor may have died
// holding input, whatever the newest restore point is (a savepoint of an earlier run included).
TEST_F(RestorePointTest, ARunMarkerOutlivesAKilledRunButNotACleanOne) {
  const std::string dir = checkpoints_.string();
  EXPECT_TRUE(PreviousRunEndedCleanly(dir)) << "no run yet";
  ASSERT_TRUE(MarkRunStarted(dir).ok());
  EXPECT_FALSE(PreviousRunEndedCleanly(dir)) << "as a killed run leaves it";
  ASSERT_TRUE(MarkRunStarted(dir).ok()) << "the next run takes it over";
  MarkRunEndedCleanly(dir);
  EXPECT_TRUE(PreviousRunEndedCleanly(dir));
}

}  // namespace
}  // namespace gcpstream::pipeline
