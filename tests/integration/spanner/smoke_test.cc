// Smoke test: the generated Spanner stubs talk to the real emulator over an insecure channel:
// instance and database creation through the admin APIs and their long-running operations, a
// read-write transaction, and a streaming SQL read. (The emulator answers BatchWrite with
// UNIMPLEMENTED, measured, so that RPC is not exercised here.)
#include <gtest/gtest.h>

#include <thread>

#include "google/longrunning/operations.grpc.pb.h"
#include "google/spanner/admin/database/v1/spanner_database_admin.grpc.pb.h"
#include "google/spanner/admin/instance/v1/spanner_instance_admin.grpc.pb.h"
#include "google/spanner/v1/spanner.grpc.pb.h"
#include "tests/support/emulators.h"

namespace gcpstream {
namespace {

namespace db = ::google::spanner::admin::database::v1;
namespace inst = ::google::spanner::admin::instance::v1;
namespace sp = ::google::spanner::v1;
namespace lro = ::google::longrunning;
using testing::Emulator;

std::chrono::system_clock::time_point Deadline(int seconds) {
  return std::chrono::system_clock::now() + std::chrono::seconds(seconds);
}

// Waits (with a deadline) for a long-running operation to finish and returns its final state.
lro::Operation AwaitOperation(lro::Operations::Stub& operations, lro::Operation op) {
  const auto give_up = Deadline(60);
  while (!op.done() && std::chrono::system_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    lro::GetOperationRequest request;
    request.set_name(op.name());
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline(10));
    lro::Operation next;
    auto status = operations.GetOperation(&ctx, request, &next);
    EXPECT_TRUE(status.ok()) << status.error_message();
    if (!status.ok()) break;
    op = next;
  }
  return op;
}

TEST(SpannerEmulatorSmokeTest, CreateDatabaseCommitAndReadBack) {
  auto channel = testing::EmulatorChannel(Emulator::kSpanner);
  ASSERT_NE(channel, nullptr);
  auto instances = inst::InstanceAdmin::NewStub(channel);
  auto databases = db::DatabaseAdmin::NewStub(channel);
  auto operations = lro::Operations::NewStub(channel);
  auto spanner = sp::Spanner::NewStub(channel);
  const std::string project = "projects/smoke";
  const std::string instance = project + "/instances/" + testing::UniqueId("i");
  const std::string database_id = "db_" + std::to_string(getpid());
  const std::string database = instance + "/databases/" + database_id;

  {
    inst::CreateInstanceRequest request;
    request.set_parent(project);
    request.set_instance_id(instance.substr(instance.rfind('/') + 1));
    request.mutable_instance()->set_config(project + "/instanceConfigs/emulator-config");
    request.mutable_instance()->set_display_name("smoke");
    request.mutable_instance()->set_node_count(1);
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline(10));
    lro::Operation op;
    auto status = instances->CreateInstance(&ctx, request, &op);
    ASSERT_TRUE(status.ok()) << status.error_message();
    op = AwaitOperation(*operations, op);
    ASSERT_TRUE(op.done()) << "CreateInstance did not finish: " << op.DebugString();
    ASSERT_FALSE(op.has_error()) << op.error().message();
  }
  {
    db::CreateDatabaseRequest request;
    request.set_parent(instance);
    request.set_create_statement("CREATE DATABASE `" + database_id + "`");
    request.add_extra_statements(
        "CREATE TABLE Flights (Id STRING(64) NOT NULL, Delay INT64) PRIMARY KEY (Id)");
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline(30));
    lro::Operation op;
    auto status = databases->CreateDatabase(&ctx, request, &op);
    ASSERT_TRUE(status.ok()) << status.error_message();
    op = AwaitOperation(*operations, op);
    ASSERT_TRUE(op.done()) << "CreateDatabase did not finish: " << op.DebugString();
    ASSERT_FALSE(op.has_error()) << op.error().message();
  }
  sp::Session session;
  {
    sp::CreateSessionRequest request;
    request.set_database(database);
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline(10));
    auto status = spanner->CreateSession(&ctx, request, &session);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  {
    sp::BeginTransactionRequest begin;
    begin.set_session(session.name());
    begin.mutable_options()->mutable_read_write();
    sp::Transaction txn;
    grpc::ClientContext begin_ctx;
    begin_ctx.set_deadline(Deadline(10));
    auto status = spanner->BeginTransaction(&begin_ctx, begin, &txn);
    ASSERT_TRUE(status.ok()) << status.error_message();

    sp::CommitRequest commit;
    commit.set_session(session.name());
    commit.set_transaction_id(txn.id());
    auto* insert = commit.add_mutations()->mutable_insert();
    insert->set_table("Flights");
    insert->add_columns("Id");
    insert->add_columns("Delay");
    auto* row = insert->add_values();
    row->add_values()->set_string_value("DTW#2001/01/01 00:47");
    row->add_values()->set_string_value("66");  // INT64 travels as a decimal string.
    sp::CommitResponse response;
    grpc::ClientContext commit_ctx;
    commit_ctx.set_deadline(Deadline(10));
    status = spanner->Commit(&commit_ctx, commit, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_TRUE(response.has_commit_timestamp());
  }
  {
    sp::ExecuteSqlRequest request;
    request.set_session(session.name());
    request.set_sql("SELECT Id, Delay FROM Flights");
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline(10));
    auto reader = spanner->ExecuteStreamingSql(&ctx, request);
    sp::PartialResultSet part;
    std::vector<std::string> values;
    while (reader->Read(&part)) {
      EXPECT_FALSE(part.chunked_value()) << "tiny values are never chunked";
      for (const auto& v : part.values()) values.push_back(v.string_value());
    }
    auto status = reader->Finish();
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(values, (std::vector<std::string>{"DTW#2001/01/01 00:47", "66"}));
  }
}

}  // namespace
}  // namespace gcpstream
