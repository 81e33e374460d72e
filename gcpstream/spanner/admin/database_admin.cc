#include "gcpstream/spanner/admin/database_admin.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gcpstream/connector/grpc_status.h"
#include "google/longrunning/operations.grpc.pb.h"
#include "google/spanner/admin/database/v1/spanner_database_admin.grpc.pb.h"
#include "google/spanner/admin/instance/v1/spanner_instance_admin.grpc.pb.h"
#include "google/spanner/v1/spanner.grpc.pb.h"

namespace gcpstream::spanner {
namespace {

namespace dbv1 = google::spanner::admin::database::v1;
namespace instv1 = google::spanner::admin::instance::v1;
namespace lro = google::longrunning;
namespace sp = google::spanner::v1;
using connector::DatabaseDestination;
using connector::FromGrpcStatus;

bool IdChars(std::string_view id, std::string_view extra) {
  return std::all_of(id.begin(), id.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || extra.find(c) != extra.npos;
  });
}

absl::Status InvalidPart(std::string_view part, std::string_view value, std::string_view rule) {
  return absl::InvalidArgumentError(
      absl::StrCat("Spanner ", absl::string_view(part.data(), part.size()), " '",
                   absl::string_view(value.data(), value.size()),
                   "' is invalid: ", absl::string_view(rule.data(), rule.size())));
}

}  // namespace

absl::Status ValidateDatabaseDestination(const DatabaseDestination& d) {
  const bool project_ok = !d.project.empty() && d.project.size() <= 100 &&
                          std::all_of(d.project.begin(), d.project.end(), [](char c) {
                            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                   (c >= '0' && c <= '9') || c == '-' || c == ':' || c == '.';
                          });
  if (!project_ok) {
    return InvalidPart("project", d.project, "1 to 100 letters, digits, '-', ':' or '.'");
  }
  const auto& i = d.instance;
  if (i.size() < 2 || i.size() > 64 || !IdChars(i, "-") ||
      !(i.front() >= 'a' && i.front() <= 'z') || i.back() == '-') {
    return InvalidPart("instance", i,
                       "2 to 64 lower-case letters, digits or '-', starting with a letter and "
                       "not ending with '-'");
  }
  const auto& db = d.database;
  if (db.size() < 2 || db.size() > 30 || !IdChars(db, "_-") ||
      !(db.front() >= 'a' && db.front() <= 'z') || db.back() == '-' || db.back() == '_') {
    return InvalidPart("database", db,
                       "2 to 30 lower-case letters, digits, '_' or '-', starting with a letter "
                       "and not ending with '_' or '-'");
  }
  return absl::OkStatus();
}

struct DatabaseAdmin::Stubs {
  std::unique_ptr<instv1::InstanceAdmin::Stub> instances;
  std::unique_ptr<dbv1::DatabaseAdmin::Stub> databases;
  std::unique_ptr<lro::Operations::Stub> operations;
  std::unique_ptr<sp::Spanner::Stub> spanner;
};

namespace {

// Polls `op` until done or `deadline`; the operation's own error becomes the result.
absl::Status Await(lro::Operations::Stub& operations, lro::Operation op,
                   std::chrono::milliseconds rpc_timeout, std::chrono::milliseconds deadline,
                   std::string_view what) {
  const auto give_up = std::chrono::steady_clock::now() + deadline;
  auto pause = std::chrono::milliseconds(100);
  while (!op.done()) {
    if (std::chrono::steady_clock::now() + pause > give_up) {
      return absl::DeadlineExceededError(
          absl::StrCat(absl::string_view(what.data(), what.size()), ": operation ", op.name(),
                       " was not done after ", deadline.count(), " ms"));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::seconds(1));
    lro::GetOperationRequest request;
    request.set_name(op.name());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + rpc_timeout);
    lro::Operation next;
    if (auto s = operations.GetOperation(&context, request, &next); !s.ok()) {
      return FromGrpcStatus(s);
    }
    op = std::move(next);
  }
  if (op.has_error()) return connector::FromRpcStatus(op.error());
  return absl::OkStatus();
}

}  // namespace

DatabaseAdmin::DatabaseAdmin(std::shared_ptr<grpc::Channel> channel,
                             std::chrono::milliseconds rpc_timeout,
                             std::chrono::milliseconds operation_deadline)
    : stubs_(std::make_unique<Stubs>(
          Stubs{instv1::InstanceAdmin::NewStub(channel), dbv1::DatabaseAdmin::NewStub(channel),
                lro::Operations::NewStub(channel), sp::Spanner::NewStub(channel)})),
      rpc_timeout_(rpc_timeout),
      operation_deadline_(operation_deadline) {}

DatabaseAdmin::~DatabaseAdmin() = default;

absl::Status DatabaseAdmin::CreateInstance(const std::string& project, const std::string& instance,
                                           const std::string& config, int node_count) {
  instv1::CreateInstanceRequest request;
  request.set_parent("projects/" + project);
  request.set_instance_id(instance);
  request.mutable_instance()->set_config("projects/" + project + "/instanceConfigs/" + config);
  request.mutable_instance()->set_display_name(instance);
  request.mutable_instance()->set_node_count(node_count);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + rpc_timeout_);
  lro::Operation op;
  if (auto s = stubs_->instances->CreateInstance(&context, request, &op); !s.ok()) {
    return FromGrpcStatus(s);
  }
  return Await(*stubs_->operations, std::move(op), rpc_timeout_, operation_deadline_,
               "CreateInstance " + instance);
}

absl::Status DatabaseAdmin::CreateDatabase(const DatabaseDestination& database, Dialect dialect,
                                           const std::vector<std::string>& ddl) {
  if (auto s = ValidateDatabaseDestination(database); !s.ok()) return s;
  dbv1::CreateDatabaseRequest request;
  request.set_parent("projects/" + database.project + "/instances/" + database.instance);
  if (dialect == Dialect::kPostgreSql) {
    request.set_database_dialect(dbv1::POSTGRESQL);
    request.set_create_statement("CREATE DATABASE \"" + database.database + "\"");
  } else {
    request.set_database_dialect(dbv1::GOOGLE_STANDARD_SQL);
    request.set_create_statement("CREATE DATABASE `" + database.database + "`");
    for (const auto& statement : ddl) request.add_extra_statements(statement);
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + rpc_timeout_);
  lro::Operation op;
  if (auto s = stubs_->databases->CreateDatabase(&context, request, &op); !s.ok()) {
    return FromGrpcStatus(s);
  }
  if (auto s = Await(*stubs_->operations, std::move(op), rpc_timeout_, operation_deadline_,
                     "CreateDatabase " + database.resource_name());
      !s.ok()) {
    return s;
  }
  if (dialect == Dialect::kPostgreSql && !ddl.empty()) return UpdateDdl(database, ddl);
  return absl::OkStatus();
}

absl::Status DatabaseAdmin::UpdateDdl(const DatabaseDestination& database,
                                      const std::vector<std::string>& statements) {
  dbv1::UpdateDatabaseDdlRequest request;
  request.set_database(database.resource_name());
  for (const auto& statement : statements) request.add_statements(statement);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + rpc_timeout_);
  lro::Operation op;
  if (auto s = stubs_->databases->UpdateDatabaseDdl(&context, request, &op); !s.ok()) {
    return FromGrpcStatus(s);
  }
  return Await(*stubs_->operations, std::move(op), rpc_timeout_, operation_deadline_,
               "UpdateDatabaseDdl " + database.resource_name());
}

absl::Status DatabaseAdmin::DropDatabase(const DatabaseDestination& database) {
  dbv1::DropDatabaseRequest request;
  request.set_database(database.resource_name());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + rpc_timeout_);
  google::protobuf::Empty empty;
  return FromGrpcStatus(stubs_->databases->DropDatabase(&context, request, &empty));
}

absl::StatusOr<Dialect> DatabaseAdmin::GetDialect(const DatabaseDestination& database) {
  {
    dbv1::GetDatabaseRequest request;
    request.set_name(database.resource_name());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + rpc_timeout_);
    dbv1::Database response;
    if (auto s = stubs_->databases->GetDatabase(&context, request, &response); !s.ok()) {
      return FromGrpcStatus(s);
    }
    if (response.database_dialect() == dbv1::POSTGRESQL) return Dialect::kPostgreSql;
    if (response.database_dialect() == dbv1::GOOGLE_STANDARD_SQL) return Dialect::kGoogleSql;
  }
  sp::Session session;
  {
    sp::CreateSessionRequest request;
    request.set_database(database.resource_name());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + rpc_timeout_);
    if (auto s = stubs_->spanner->CreateSession(&context, request, &session); !s.ok()) {
      return FromGrpcStatus(s);
    }
  }
  sp::ExecuteSqlRequest request;
  request.set_session(session.name());
  request.set_sql(
      "SELECT OPTION_VALUE FROM INFORMATION_SCHEMA.DATABASE_OPTIONS "
      "WHERE OPTION_NAME = 'database_dialect'");
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + rpc_timeout_);
  sp::ResultSet result;
  const grpc::Status status = stubs_->spanner->ExecuteSql(&context, request, &result);
  {
    sp::DeleteSessionRequest del;
    del.set_name(session.name());
    grpc::ClientContext del_context;
    del_context.set_deadline(std::chrono::system_clock::now() + rpc_timeout_);
    google::protobuf::Empty empty;
    (void)stubs_->spanner->DeleteSession(&del_context, del, &empty);  // best effort
  }
  if (!status.ok()) return FromGrpcStatus(status);
  if (result.rows_size() == 1 && result.rows(0).values_size() == 1) {
    const std::string& value = result.rows(0).values(0).string_value();
    if (value == "POSTGRESQL") return Dialect::kPostgreSql;
    if (value == "GOOGLE_STANDARD_SQL") return Dialect::kGoogleSql;
  }
  return absl::FailedPreconditionError(
      absl::StrCat("the dialect of ", database.resource_name(),
                   " is neither reported by GetDatabase nor readable from "
                   "INFORMATION_SCHEMA.DATABASE_OPTIONS"));
}

}  // namespace gcpstream::spanner
