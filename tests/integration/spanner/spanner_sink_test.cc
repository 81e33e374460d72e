// SpannerSink against the Spanner emulator through the BatchWrite stand-in, in both dialects:
// every mutation kind read back, per-group refusals routed or failing the job as the Spanner
// connector spec sorts them, a stream cut part-way, a stalled stream, and a session deleted
// under the sink.
#include "gcpstream/spanner/sink/spanner_sink.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/spanner/admin/database_admin.h"
#include "tests/fakes/spanner_standin.h"
#include "tests/support/emulators.h"
#include "tests/support/fake_contexts.h"

namespace gcpstream::spanner {
namespace {

using namespace std::chrono_literals;
using connector::DatabaseDestination;
using ::testing::HasSubstr;
namespace sp = google::spanner::v1;

// A record is the mutation it becomes.
using Record = std::function<absl::StatusOr<std::optional<Mutation>>()>;

struct Routed {
  std::mutex mu;
  std::vector<absl::Status> statuses;
};

class SpannerSinkIT : public ::testing::Test {
 protected:
  void SetUp() override {
    auto standin =
        testing::SpannerStandIn::start(testing::EmulatorEndpoint(testing::Emulator::kSpanner));
    ASSERT_TRUE(standin.ok()) << standin.status();
    standin_ = *std::move(standin);
    channel_ = grpc::CreateChannel(standin_->endpoint(), grpc::InsecureChannelCredentials());
    admin_ = std::make_unique<DatabaseAdmin>(channel_);
    instance_ = testing::UniqueId("sink");
    ASSERT_TRUE(admin_->CreateInstance("p", instance_).ok());
    options_.retry_initial_backoff = 5ms;
    options_.retry_max_backoff = 20ms;
  }

  void CreateDatabase(Dialect dialect) {
    db_ = DatabaseDestination::of("p", instance_, testing::UniqueId("db"));
    std::vector<std::string> ddl;
    if (dialect == Dialect::kGoogleSql) {
      ddl = {
          "CREATE TABLE Flights (Id STRING(64) NOT NULL, Delay INT64 NOT NULL, Note STRING(8), "
          "CONSTRAINT DelayNotNegative CHECK (Delay >= 0)) PRIMARY KEY (Id)",
          "CREATE INDEX FlightsByDelay ON Flights(Delay) STORING (Note)"};
    } else {
      ddl = {
          "CREATE TABLE Flights (Id varchar(64) NOT NULL, Delay bigint NOT NULL, Note "
          "varchar(8), PRIMARY KEY (Id))",
          "CREATE INDEX FlightsByDelay ON Flights(Delay) INCLUDE (Note)"};
    }
    auto created = admin_->CreateDatabase(db_, dialect, ddl);
    ASSERT_TRUE(created.ok()) << created;
  }

  std::unique_ptr<SinkWriter<Record>> Writer(
      ConstraintViolationPolicy policy = ConstraintViolationPolicy::kFailJob) {
    auto sink = SpannerSink<Record>::builder()
                    .database(db_)
                    .serializer([](const Record& r, const SinkWriterContext&) { return r(); })
                    .writer_options(options_)
                    .emulator_endpoint(standin_->endpoint())
                    .constraint_violation_policy(policy)
                    .failed_mutation_handler(connector::FailureHandler::custom(
                        [routed = routed_](const connector::FailedElement& e) {
                          std::lock_guard lock(routed->mu);
                          routed->statuses.push_back(e.status());
                          return absl::OkStatus();
                        }))
                    .build();
    EXPECT_TRUE(sink.ok()) << sink.status();
    auto w = (*sink)->create_writer(context_);
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? std::move(*w) : nullptr;
  }

  static Record Write(Mutation::Builder b) {
    return [b = std::make_shared<Mutation::Builder>(std::move(b))]()
               -> absl::StatusOr<std::optional<Mutation>> { return Mutation::Builder(*b).Build(); };
  }
  static Record Upsert(const std::string& id, std::int64_t delay) {
    return Write(std::move(Mutation::InsertOrUpdate("Flights")
                               .Set("Id", Value::String(id))
                               .Set("Delay", Value::Int64(delay))));
  }
  static Record Insert(const std::string& id, std::int64_t delay) {
    return Write(std::move(Mutation::Insert("Flights")
                               .Set("Id", Value::String(id))
                               .Set("Delay", Value::Int64(delay))));
  }

  absl::Status WriteAll(SinkWriter<Record>& w, const std::vector<Record>& records) {
    for (const auto& r : records) {
      if (absl::Status s = w.write(r, ctx_); !s.ok()) return s;
    }
    return w.flush(false);
  }

  // Id -> "Delay|Note" of every row, read through the stand-in.
  std::map<std::string, std::string> Rows() {
    auto stub = sp::Spanner::NewStub(channel_);
    sp::CreateSessionRequest create;
    create.set_database(db_.resource_name());
    sp::Session session;
    {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + 10s);
      EXPECT_TRUE(stub->CreateSession(&ctx, create, &session).ok());
    }
    sp::ExecuteSqlRequest request;
    request.set_session(session.name());
    request.set_sql("SELECT Id, Delay, Note FROM Flights");
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    sp::ResultSet result;
    auto s = stub->ExecuteSql(&ctx, request, &result);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::map<std::string, std::string> rows;
    for (const auto& row : result.rows()) {
      rows[row.values(0).string_value()] =
          row.values(1).string_value() + "|" +
          (row.values(2).has_null_value() ? "NULL" : row.values(2).string_value());
    }
    return rows;
  }

  std::vector<absl::Status> routed() {
    std::lock_guard lock(routed_->mu);
    return routed_->statuses;
  }

  std::unique_ptr<testing::SpannerStandIn> standin_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<DatabaseAdmin> admin_;
  std::string instance_;
  DatabaseDestination db_;
  SpannerWriterOptions options_;
  testing::TestMailbox mailbox_;
  testing::FakeWriterInitContext context_{mailbox_};
  SinkWriterContext ctx_;
  std::shared_ptr<Routed> routed_ = std::make_shared<Routed>();
};

TEST_F(SpannerSinkIT, EveryMutationKindLandsInBothDialects) {
  for (Dialect dialect : {Dialect::kGoogleSql, Dialect::kPostgreSql}) {
    SCOPED_TRACE(std::string(DialectName(dialect)));
    CreateDatabase(dialect);
    auto w = Writer();
    ASSERT_NE(w, nullptr);
    std::vector<Record> records;
    for (int i = 0; i < 6; ++i) records.push_back(Insert("k" + std::to_string(i), i));
    ASSERT_TRUE(WriteAll(*w, records).ok());
    records = {
        Write(std::move(Mutation::Update("Flights")
                            .Set("Id", Value::String("k0"))
                            .Set("Note", Value::String("updated")))),
        Upsert("k1", 100),
        Write(std::move(Mutation::Replace("Flights")
                            .Set("Id", Value::String("k2"))
                            .Set("Delay", Value::Int64(200)))),
        [] {
          return absl::StatusOr<std::optional<Mutation>>(
              Mutation::Delete("Flights", KeySet().AddKey({Value::String("k3").value()})));
        },
        [] {
          return absl::StatusOr<std::optional<Mutation>>(Mutation::Delete(
              "Flights", KeySet().AddRange(KeyRange::ClosedOpen({Value::String("k4").value()},
                                                                {Value::String("k5").value()}))));
        },
        Upsert("k9", 9),
    };
    ASSERT_TRUE(WriteAll(*w, records).ok());
    EXPECT_EQ(Rows(), (std::map<std::string, std::string>{{"k0", "0|updated"},
                                                          {"k1", "100|NULL"},
                                                          {"k2", "200|NULL"},
                                                          {"k5", "5|NULL"},
                                                          {"k9", "9|NULL"}}));
    EXPECT_TRUE(routed().empty());
    ASSERT_TRUE(w->close().ok());
  }
}

TEST_F(SpannerSinkIT, AReplayedInsertIsRoutedAsAlreadyExistsAndTheRestLands) {
  CreateDatabase(Dialect::kGoogleSql);
  auto w = Writer();
  ASSERT_TRUE(WriteAll(*w, {Insert("a", 1), Insert("b", 2), Insert("a", 3)}).ok());
  auto r = routed();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].code(), absl::StatusCode::kAlreadyExists) << r[0];
  EXPECT_EQ(Rows(), (std::map<std::string, std::string>{{"a", "1|NULL"}, {"b", "2|NULL"}}));
  ASSERT_TRUE(w->close().ok());
}

TEST_F(SpannerSinkIT, ConstraintViolationsFailTheJobOrAreRoutedByPolicy) {
  CreateDatabase(Dialect::kGoogleSql);
  // A NOT NULL column left unset, a STRING(8) given nine characters, a CHECK constraint broken.
  // Measured on emulator 1.5.28: FAILED_PRECONDITION, FAILED_PRECONDITION, OUT_OF_RANGE.
  const std::vector<Record> bad = {
      Write(std::move(Mutation::Insert("Flights").Set("Id", Value::String("no-delay")))),
      Write(std::move(Mutation::Insert("Flights")
                          .Set("Id", Value::String("long"))
                          .Set("Delay", Value::Int64(1))
                          .Set("Note", Value::String("123456789")))),
      Insert("negative", -1),
  };
  {
    auto w = Writer(ConstraintViolationPolicy::kFailJob);
    absl::Status s = WriteAll(*w, {bad[0]});
    EXPECT_FALSE(s.ok());
    EXPECT_THAT(std::string(s.message()), HasSubstr("constraint_violation_policy")) << s;
    EXPECT_TRUE(routed().empty());
    (void)w->close();
  }
  auto w = Writer(ConstraintViolationPolicy::kRouteToFailureHandler);
  ASSERT_TRUE(WriteAll(*w, {bad[0], bad[1], bad[2], Insert("fine", 1)}).ok());
  auto r = routed();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].code(), absl::StatusCode::kFailedPrecondition) << r[0];
  EXPECT_EQ(r[1].code(), absl::StatusCode::kFailedPrecondition) << r[1];
  EXPECT_EQ(r[2].code(), absl::StatusCode::kOutOfRange) << r[2];
  EXPECT_EQ(Rows().size(), 1u);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(SpannerSinkIT, AStreamCutPartWayReSendsOnlyTheUndecidedGroups) {
  CreateDatabase(Dialect::kGoogleSql);
  testing::FaultRule rule;
  rule.method = "BatchWrite";
  rule.action = testing::FaultRule::Action::kCutStream;
  rule.cut_after = 2;
  rule.times = 1;
  standin_->proxy().add_rule(rule);
  auto w = Writer();
  std::vector<Record> records;
  for (int i = 0; i < 5; ++i) records.push_back(Upsert("k" + std::to_string(i), i));
  ASSERT_TRUE(WriteAll(*w, records).ok());
  EXPECT_EQ(standin_->batch_write_calls(), 2);
  // The first call saw 5 groups (it may have applied more than it reported); the second
  // carried only the 3 never reported.
  EXPECT_GE(standin_->groups_received(), 2 + 3);
  EXPECT_LE(standin_->groups_received(), 5 + 3);
  EXPECT_EQ(Rows().size(), 5u);
  EXPECT_EQ(context_.metric("mutationsRetried"), 3);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(SpannerSinkIT, AStalledStreamIsCutByTheAttemptTimeoutAndRetried) {
  CreateDatabase(Dialect::kGoogleSql);
  testing::FaultRule rule;
  rule.method = "BatchWrite";
  rule.action = testing::FaultRule::Action::kStallStream;
  rule.cut_after = 1;
  rule.times = 1;
  standin_->proxy().add_rule(rule);
  options_.batch_write_timeout = 1500ms;
  auto w = Writer();
  ASSERT_TRUE(WriteAll(*w, {Upsert("a", 1), Upsert("b", 2), Upsert("c", 3)}).ok());
  EXPECT_EQ(Rows().size(), 3u);
  EXPECT_GE(context_.metric("errorClass.DEADLINE_EXCEEDED.errors"), 1);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(SpannerSinkIT, ASessionDeletedUnderTheSinkIsReplaced) {
  CreateDatabase(Dialect::kGoogleSql);
  auto w = Writer();
  ASSERT_TRUE(WriteAll(*w, {Upsert("a", 1)}).ok());
  // Delete every session of the database behind the sink's back.
  auto stub = sp::Spanner::NewStub(channel_);
  sp::ListSessionsRequest list;
  list.set_database(db_.resource_name());
  sp::ListSessionsResponse sessions;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub->ListSessions(&ctx, list, &sessions).ok());
  }
  ASSERT_GE(sessions.sessions_size(), 1);
  for (const auto& s : sessions.sessions()) {
    sp::DeleteSessionRequest del;
    del.set_name(s.name());
    grpc::ClientContext ctx;
    google::protobuf::Empty empty;
    ASSERT_TRUE(stub->DeleteSession(&ctx, del, &empty).ok());
  }
  absl::Status s = WriteAll(*w, {Upsert("b", 2)});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Rows().size(), 2u);
  EXPECT_LE(context_.metric("mutationsRetried"), 0) << "replacing a session is not a retry";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(SpannerSinkIT, AMissingTableFailsTheJobEvenUnderADroppingHandler) {
  CreateDatabase(Dialect::kGoogleSql);
  auto w = Writer(ConstraintViolationPolicy::kRouteToFailureHandler);
  absl::Status s = WriteAll(
      *w, {Write(std::move(Mutation::Insert("NoSuchTable").Set("Id", Value::String("a"))))});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_TRUE(routed().empty());
  (void)w->close();
}

}  // namespace
}  // namespace gcpstream::spanner
