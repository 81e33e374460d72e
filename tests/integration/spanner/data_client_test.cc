// The Spanner data client against the emulator: commits in both forms read back through
// ExecuteStreamingSql and StreamingRead, a value large enough to travel in chunks, a
// partitioned query in a read-only transaction whose partitions together return every row
// once (Spanner "Read data in parallel"), and service errors returned with their codes.
#include "gcpstream/spanner/client/data_client.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <future>

#include "gcpstream/spanner/admin/database_admin.h"
#include "gcpstream/util/timer_thread.h"
#include "tests/fakes/fault_proxy.h"
#include "tests/support/emulators.h"

namespace gcpstream::spanner {
namespace {

namespace sp = google::spanner::v1;
using connector::DatabaseDestination;

class DataClientIT : public ::testing::Test {
 protected:
  void SetUp() override {
    channel_ = testing::EmulatorChannel(testing::Emulator::kSpanner);
    ASSERT_NE(channel_, nullptr);
    DatabaseAdmin admin(channel_);
    const std::string instance = testing::UniqueId("dc");
    ASSERT_TRUE(admin.CreateInstance("p", instance).ok());
    db_ = DatabaseDestination::of("p", instance, testing::UniqueId("db"));
    auto created = admin.CreateDatabase(
        db_, Dialect::kGoogleSql,
        {"CREATE TABLE T (Id STRING(64) NOT NULL, Name STRING(MAX), N INT64) PRIMARY KEY (Id)",
         "CREATE INDEX TByN ON T(N)"});
    ASSERT_TRUE(created.ok()) << created;
    stub_ = MakeGrpcSpannerStub(channel_);
    pool_ = std::make_shared<SessionPool>(db_.resource_name(), stub_, timers_);
    client_ = std::make_unique<SpannerDataClient>(db_.resource_name(), stub_, pool_);
  }
  void TearDown() override {
    if (pool_) pool_->shutdown();
    if (proxy_pool_) proxy_pool_->shutdown();
  }

  static Mutation Row(const std::string& id, const std::string& name, std::int64_t n) {
    return *Mutation::Insert("T")
                .Set("Id", Value::String(id))
                .Set("Name", Value::String(name))
                .Set("N", Value::Int64(n))
                .Build();
  }
  // Every row of `request` as "Id=Name".
  std::vector<std::string> Query(sp::ExecuteSqlRequest request, absl::Status* status = nullptr) {
    std::vector<std::string> rows;
    const absl::Status s = client_->ExecuteStreamingSql(
        std::move(request),
        [&](const sp::ResultSetMetadata&, std::vector<google::protobuf::Value> row) {
          rows.push_back(row.at(0).string_value() + "=" + row.at(1).string_value());
          return absl::OkStatus();
        });
    if (status) *status = s;
    EXPECT_TRUE(status || s.ok()) << s;
    return rows;
  }
  // 40 rows of 100 kB: the emulator sends them in several PartialResultSets, each with a
  // resume token.
  void CommitBigRows() {
    std::vector<Mutation> rows;
    for (int i = 0; i < 40; ++i) {
      rows.push_back(Row("r" + std::to_string(100 + i), std::string(100000, 'a' + i % 26), i));
    }
    ASSERT_TRUE(client_->Commit(std::move(rows)).ok());
  }
  // A client whose calls go through a fault proxy that cuts or stalls the first
  // ExecuteStreamingSql after `cut_after` messages.
  std::unique_ptr<SpannerDataClient> ThroughProxy(
      testing::FaultRule::Action action, int cut_after,
      std::chrono::milliseconds idle_timeout = std::chrono::milliseconds(0)) {
    auto proxy = testing::FaultProxy::start(testing::EmulatorEndpoint(testing::Emulator::kSpanner));
    EXPECT_TRUE(proxy.ok()) << proxy.status();
    if (!proxy.ok()) return nullptr;
    proxy_ = *std::move(proxy);
    testing::FaultRule rule;
    rule.method = "ExecuteStreamingSql";
    rule.action = action;
    rule.cut_after = cut_after;
    rule.nth = 1;
    proxy_->add_rule(rule);
    auto stub = MakeGrpcSpannerStub(
        grpc::CreateChannel(proxy_->endpoint(), grpc::InsecureChannelCredentials()));
    proxy_pool_ = std::make_shared<SessionPool>(db_.resource_name(), stub, timers_);
    DataClientOptions options;
    options.retry.initial_backoff = std::chrono::milliseconds(5);
    options.stream_idle_timeout = idle_timeout;
    return std::make_unique<SpannerDataClient>(db_.resource_name(), stub, proxy_pool_, options);
  }
  static sp::ExecuteSqlRequest Sql(const std::string& sql) {
    sp::ExecuteSqlRequest request;
    request.set_sql(sql);
    return request;
  }

  std::shared_ptr<grpc::Channel> channel_;
  DatabaseDestination db_;
  std::shared_ptr<SpannerStub> stub_;
  std::shared_ptr<util::TimerThread> timers_ = std::make_shared<util::TimerThread>();
  std::shared_ptr<SessionPool> pool_;
  std::unique_ptr<SpannerDataClient> client_;
  std::unique_ptr<testing::FaultProxy> proxy_;
  std::shared_ptr<SessionPool> proxy_pool_;
};

TEST_F(DataClientIT, CommitsOfBothFormsAreReadBackByQueryAndByRead) {
  auto single = client_->Commit({Row("a", "alpha", 3), Row("b", "beta", 1)});
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_TRUE(single->has_commit_timestamp());
  CommitOptions options;
  options.mode = CommitMode::kBeginThenCommit;
  auto begun = client_->Commit({Row("c", "gamma", 2)}, options);
  ASSERT_TRUE(begun.ok()) << begun.status();

  EXPECT_EQ(Query(Sql("SELECT Id, Name FROM T ORDER BY Id")),
            (std::vector<std::string>{"a=alpha", "b=beta", "c=gamma"}));

  sp::ReadRequest read;
  read.set_table("T");
  read.set_index("TByN");
  read.add_columns("Id");
  read.add_columns("N");
  read.mutable_key_set()->set_all(true);
  std::vector<std::string> by_n;
  ASSERT_TRUE(
      client_
          ->StreamingRead(
              read,
              [&](const sp::ResultSetMetadata& m, std::vector<google::protobuf::Value> row) {
                EXPECT_EQ(m.row_type().fields(1).type().code(), sp::INT64);
                by_n.push_back(row[0].string_value() + ":" + row[1].string_value());
                return absl::OkStatus();
              })
          .ok());
  EXPECT_EQ(by_n, (std::vector<std::string>{"b:1", "c:2", "a:3"})) << "index order";
}

TEST_F(DataClientIT, ALargeValueArrivesWhole) {
  std::string big(1500000, 'x');
  for (std::size_t i = 0; i < big.size(); i += 997) big[i] = static_cast<char>('a' + i % 26);
  ASSERT_TRUE(client_->Commit({Row("big", big, 0)}).ok());
  const auto rows = Query(Sql("SELECT Id, Name FROM T"));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(rows[0] == "big=" + big) << "a value of " << rows[0].size() - 4 << " bytes";
}

TEST_F(DataClientIT, AStreamCutByTheNetworkResumesFromItsTokenWithoutRepeatingARow) {
  CommitBigRows();
  auto through_proxy = ThroughProxy(testing::FaultRule::Action::kCutStream, 2);
  ASSERT_NE(through_proxy, nullptr);

  std::vector<std::string> ids;
  const absl::Status s = through_proxy->ExecuteStreamingSql(
      Sql("SELECT Id, Name FROM T ORDER BY Id"),
      [&](const sp::ResultSetMetadata&, std::vector<google::protobuf::Value> row) {
        EXPECT_EQ(row[1].string_value().size(), 100000u);
        ids.push_back(row[0].string_value());
        return absl::OkStatus();
      });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(proxy_->faults(), 1) << "the stream was never cut: it had too few messages";
  EXPECT_EQ(proxy_->calls("ExecuteStreamingSql"), 2);
  ASSERT_EQ(ids.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(ids[i], "r" + std::to_string(100 + i));
}

// A stream that stalls mid-way (the proxy forwards one message, then nothing, and keeps the
// call open): stream_idle_timeout cuts it and the read resumes from the last resume token, so
// every row arrives once instead of the read waiting forever.
TEST_F(DataClientIT, AStalledStreamIsCutByTheIdleTimeoutAndResumed) {
  CommitBigRows();
  auto through_proxy =
      ThroughProxy(testing::FaultRule::Action::kStallStream, 1, std::chrono::milliseconds(500));
  ASSERT_NE(through_proxy, nullptr);
  std::vector<std::string> ids;
  auto read = std::async(std::launch::async, [&] {
    return through_proxy->ExecuteStreamingSql(
        Sql("SELECT Id, Name FROM T ORDER BY Id"),
        [&](const sp::ResultSetMetadata&, std::vector<google::protobuf::Value> row) {
          ids.push_back(row.at(0).string_value());
          return absl::OkStatus();
        });
  });
  ASSERT_EQ(read.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the stalled read was not cut; rows so far: " << ids.size();
  const absl::Status s = read.get();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(proxy_->faults(), 1);
  EXPECT_EQ(proxy_->calls("ExecuteStreamingSql"), 2) << "one stalled call, one resume";
  ASSERT_EQ(ids.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(ids[i], "r" + std::to_string(100 + i));
}

TEST_F(DataClientIT, AStalledStreamEndsOnCancelAndAnEarlyStopCancelsTheCall) {
  CommitBigRows();
  auto through_proxy = ThroughProxy(testing::FaultRule::Action::kStallStream, 1);
  ASSERT_NE(through_proxy, nullptr);

  ReadCancellation cancel;
  auto stalled = std::async(std::launch::async, [&] {
    return through_proxy->ExecuteStreamingSql(
        Sql("SELECT Id, Name FROM T"),
        [](const sp::ResultSetMetadata&, std::vector<google::protobuf::Value>) {
          return absl::OkStatus();
        },
        &cancel);
  });
  EXPECT_EQ(stalled.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "the stream should hang in the stall";
  cancel.cancel();
  ASSERT_EQ(stalled.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "cancel did not end a stalled gRPC stream";
  EXPECT_EQ(stalled.get().code(), absl::StatusCode::kCancelled);

  // The second call is not faulted: stopping after one row ends the call at once.
  int seen = 0;
  const absl::Status early = through_proxy->ExecuteStreamingSql(
      Sql("SELECT Id, Name FROM T"),
      [&](const sp::ResultSetMetadata&, std::vector<google::protobuf::Value>) {
        ++seen;
        return absl::AbortedError("enough");
      });
  EXPECT_EQ(early.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(seen, 1);
}

TEST_F(DataClientIT, APartitionedQueryReturnsEveryRowOnceAtOneTimestamp) {
  std::vector<Mutation> rows;
  for (int i = 0; i < 200; ++i) rows.push_back(Row("r" + std::to_string(1000 + i), "n", i));
  ASSERT_TRUE(client_->Commit(std::move(rows)).ok());

  auto session = client_->AcquireSession();
  ASSERT_TRUE(session.ok()) << session.status();
  sp::TransactionOptions read_only;
  read_only.mutable_read_only()->set_strong(true);
  read_only.mutable_read_only()->set_return_read_timestamp(true);
  auto tx = client_->BeginTransaction(*session, read_only);
  ASSERT_TRUE(tx.ok()) << tx.status();
  EXPECT_TRUE(tx->has_read_timestamp());

  sp::PartitionQueryRequest partition;
  partition.set_session(*session);
  partition.mutable_transaction()->set_id(tx->id());
  partition.set_sql("SELECT Id, Name FROM T");
  partition.mutable_partition_options()->set_max_partitions(4);
  auto partitions = client_->PartitionQuery(partition);
  ASSERT_TRUE(partitions.ok()) << partitions.status();
  ASSERT_GE(partitions->partitions_size(), 1);

  std::vector<std::string> all;
  for (const auto& p : partitions->partitions()) {
    sp::ExecuteSqlRequest request = Sql("SELECT Id, Name FROM T");
    request.set_session(*session);
    request.mutable_transaction()->set_id(tx->id());
    request.set_partition_token(p.partition_token());
    for (auto& r : Query(request)) all.push_back(std::move(r));
  }
  client_->ReleaseSession(*session);
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), 200u);
  EXPECT_EQ(std::unique(all.begin(), all.end()), all.end()) << "a row read twice";
}

TEST_F(DataClientIT, ServiceErrorsKeepTheirCodesAndAreNotRetried) {
  ASSERT_TRUE(client_->Commit({Row("a", "alpha", 3)}).ok());
  EXPECT_EQ(client_->Commit({Row("a", "again", 3)}).status().code(),
            absl::StatusCode::kAlreadyExists);
  absl::Status status;
  Query(Sql("SELECT Id, Name FROM Missing"), &status);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;

  auto elsewhere = std::make_shared<SessionPool>(db_.resource_name() + "x", stub_, timers_);
  SpannerDataClient missing(db_.resource_name() + "x", stub_, elsewhere);
  EXPECT_EQ(missing.Commit({Row("a", "b", 1)}).status().code(), absl::StatusCode::kNotFound);
  elsewhere->shutdown();
}

}  // namespace
}  // namespace gcpstream::spanner
