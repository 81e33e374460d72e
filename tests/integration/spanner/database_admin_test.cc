// DatabaseAdmin against the Spanner emulator: instances and databases through their
// long-running operations, DDL updates, and the dialect of a database in both dialects (the
// emulator's GetDatabase reports it as unspecified, so this is also the test that the
// INFORMATION_SCHEMA fallback reads it right).
#include "gcpstream/spanner/admin/database_admin.h"

#include <gtest/gtest.h>

#include "google/spanner/v1/spanner.grpc.pb.h"
#include "tests/support/emulators.h"

namespace gcpstream::spanner {
namespace {

using connector::DatabaseDestination;
using testing::Emulator;

std::string ShortId(const std::string& prefix) {
  // UniqueId is "prefix-pid-ms-n": within Spanner's 30-character database id limit.
  return testing::UniqueId(prefix);
}

class DatabaseAdminIT : public ::testing::Test {
 protected:
  void SetUp() override {
    channel_ = testing::EmulatorChannel(Emulator::kSpanner);
    ASSERT_NE(channel_, nullptr);
    admin_ = std::make_unique<DatabaseAdmin>(channel_);
    instance_ = ShortId("adm");
    ASSERT_TRUE(admin_->CreateInstance("p", instance_).ok());
  }
  DatabaseDestination Db(const std::string& prefix) {
    return DatabaseDestination::of("p", instance_, ShortId(prefix));
  }
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<DatabaseAdmin> admin_;
  std::string instance_;
};

TEST_F(DatabaseAdminIT, TheDialectOfEitherKindOfDatabaseIsRecognised) {
  const auto google = Db("g");
  ASSERT_TRUE(admin_
                  ->CreateDatabase(google, Dialect::kGoogleSql,
                                   {"CREATE TABLE T (Id INT64 NOT NULL) PRIMARY KEY (Id)"})
                  .ok());
  const auto postgres = Db("pg");
  auto created = admin_->CreateDatabase(postgres, Dialect::kPostgreSql,
                                        {"CREATE TABLE t (id bigint NOT NULL, PRIMARY KEY (id))"});
  ASSERT_TRUE(created.ok()) << created;
  auto g = admin_->GetDialect(google);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(*g, Dialect::kGoogleSql);
  auto pg = admin_->GetDialect(postgres);
  ASSERT_TRUE(pg.ok()) << pg.status();
  EXPECT_EQ(*pg, Dialect::kPostgreSql);
}

TEST_F(DatabaseAdminIT, DdlUpdatesTakeEffectAndBadDdlFailsWithTheServiceCode) {
  const auto db = Db("ddl");
  ASSERT_TRUE(admin_->CreateDatabase(db, Dialect::kGoogleSql).ok());
  auto added = admin_->UpdateDdl(
      db, {"CREATE TABLE Flights (Id STRING(64) NOT NULL, Delay INT64) PRIMARY KEY (Id)",
           "CREATE INDEX FlightsByDelay ON Flights(Delay)"});
  ASSERT_TRUE(added.ok()) << added;
  auto again = admin_->UpdateDdl(db, {"CREATE TABLE Flights (Id INT64) PRIMARY KEY (Id)"});
  EXPECT_FALSE(again.ok()) << "a table created twice";
  auto garbage = admin_->UpdateDdl(db, {"CREATE TABLEZ nope"});
  EXPECT_EQ(garbage.code(), absl::StatusCode::kInvalidArgument) << garbage;
}

TEST_F(DatabaseAdminIT, CreatingADatabaseTwiceAnswersAlreadyExists) {
  const auto db = Db("twice");
  ASSERT_TRUE(admin_->CreateDatabase(db, Dialect::kGoogleSql).ok());
  EXPECT_EQ(admin_->CreateDatabase(db, Dialect::kGoogleSql).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(admin_->DropDatabase(db).ok());
  EXPECT_EQ(admin_->GetDialect(db).status().code(), absl::StatusCode::kNotFound);
}

TEST(DatabaseDestinationTest, NamesBreakingSpannersRulesAreRefusedNamingThePart) {
  EXPECT_TRUE(ValidateDatabaseDestination(DatabaseDestination::of("p-1", "inst-1", "db_1")).ok());
  auto bad_db = ValidateDatabaseDestination(DatabaseDestination::of("p", "inst", "1db"));
  EXPECT_NE(bad_db.message().find("database '1db'"), std::string::npos) << bad_db;
  EXPECT_FALSE(ValidateDatabaseDestination(DatabaseDestination::of("p", "inst", "d")).ok());
  EXPECT_FALSE(
      ValidateDatabaseDestination(DatabaseDestination::of("p", "inst", std::string(31, 'd'))).ok());
  EXPECT_FALSE(ValidateDatabaseDestination(DatabaseDestination::of("p", "Inst", "db")).ok());
  EXPECT_FALSE(ValidateDatabaseDestination(DatabaseDestination::of("p", "inst-", "db")).ok());
  EXPECT_FALSE(ValidateDatabaseDestination(DatabaseDestination::of("", "inst", "db")).ok());
  EXPECT_FALSE(ValidateDatabaseDestination(DatabaseDestination::of("p/x", "inst", "db")).ok());
}

}  // namespace
}  // namespace gcpstream::spanner
