#ifndef GCPSTREAM_SPANNER_ADMIN_DATABASE_ADMIN_H_
#define GCPSTREAM_SPANNER_ADMIN_DATABASE_ADMIN_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/spanner/client/value.h"

namespace gcpstream::spanner {

// Instance and database administration over the generated InstanceAdmin, DatabaseAdmin and
// Operations stubs: what a test, the example pipelines and a user's trial run need to set a
// database up. The sink never creates anything; this is not on its path.
//
// Every call is synchronous. A call that starts a long-running operation polls it (every
// 100 ms, then backing off to 1 s) until it is done or `operation_deadline` has passed, which
// answers DEADLINE_EXCEEDED naming the operation; an operation that ends in error answers that
// error's code and message. Nothing is retried. Thread-safe.
class DatabaseAdmin {
 public:
  // `channel` reaches the service or the emulator (or the BatchWrite stand-in in front of it).
  // `rpc_timeout` bounds each RPC; `operation_deadline` bounds the wait for an operation.
  explicit DatabaseAdmin(std::shared_ptr<grpc::Channel> channel,
                         std::chrono::milliseconds rpc_timeout = std::chrono::seconds(30),
                         std::chrono::milliseconds operation_deadline = std::chrono::minutes(10));
  ~DatabaseAdmin();

  // Creates projects/<project>/instances/<instance> on `config` (the emulator's is
  // "emulator-config"). ALREADY_EXISTS is returned as is.
  absl::Status CreateInstance(const std::string& project, const std::string& instance,
                              const std::string& config = "emulator-config", int node_count = 1);

  // Creates the database in `dialect` and applies `ddl` to it. For GoogleSQL the statements
  // travel with the create request (extra_statements); a PostgreSQL database is created bare
  // and the statements are applied by UpdateDdl afterwards, because the service refuses
  // extra_statements for that dialect. ALREADY_EXISTS is returned as is.
  absl::Status CreateDatabase(const connector::DatabaseDestination& database, Dialect dialect,
                              const std::vector<std::string>& ddl = {});

  // Applies DDL statements (UpdateDatabaseDdl) and waits for them to take effect.
  absl::Status UpdateDdl(const connector::DatabaseDestination& database,
                         const std::vector<std::string>& statements);

  absl::Status DropDatabase(const connector::DatabaseDestination& database);

  // The database's dialect. GetDatabase reports it on the service; the bundled emulator
  // (1.5.28) always reports DATABASE_DIALECT_UNSPECIFIED, so then it is read from
  // INFORMATION_SCHEMA.DATABASE_OPTIONS ('database_dialect'), with one SQL text that both
  // dialects accept (unquoted identifiers: case-insensitive in GoogleSQL, folded to lower case
  // in PostgreSQL). That needs a session, created and deleted here.
  absl::StatusOr<Dialect> GetDialect(const connector::DatabaseDestination& database);

 private:
  struct Stubs;
  std::unique_ptr<Stubs> stubs_;
  std::chrono::milliseconds rpc_timeout_;
  std::chrono::milliseconds operation_deadline_;
};

// INVALID_ARGUMENT unless the parts follow Spanner's naming rules (Spanner "Create and manage
// instances" and "Create and manage databases"): instance id 2–64 characters of lower-case
// letters, digits and '-', starting with a letter and not ending with '-'; database id 2–30
// characters of lower-case letters, digits, '_' and '-', starting with a letter and not ending
// with '_' or '-'. The message names the part and the rule.
absl::Status ValidateDatabaseDestination(const connector::DatabaseDestination& database);

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_ADMIN_DATABASE_ADMIN_H_
