#ifndef GCPSTREAM_BIGTABLE_ADMIN_TABLE_ADMIN_H_
#define GCPSTREAM_BIGTABLE_ADMIN_TABLE_ADMIN_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/bigtable/admin/table_create_options.h"
#include "gcpstream/connector/destinations.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"

namespace gcpstream::bigtable {

// Table administration the sink needs. Asynchronous: callbacks run on a gRPC thread. The admin
// client retries nothing: the sink's recovery budget is what stands between one transient admin
// failure and a restart.
class TableAdmin {
 public:
  virtual ~TableAdmin() = default;
  // Creates the table with `options`' families. ALREADY_EXISTS is returned as is (the caller
  // then adds what is missing).
  virtual void async_create_table(const connector::TableDestination& table,
                                  const TableCreateOptions& options,
                                  std::function<void(absl::Status)> done) = 0;
  // The table with its column families (schema view).
  virtual void async_get_table(
      const connector::TableDestination& table,
      std::function<void(absl::StatusOr<google::bigtable::admin::v2::Table>)> done) = 0;
  // Adds families in one atomic request.
  virtual void async_add_families(const connector::TableDestination& table,
                                  const std::vector<std::string>& families,
                                  const TableCreateOptions& options,
                                  std::function<void(absl::Status)> done) = 0;
};

std::shared_ptr<TableAdmin> MakeGrpcTableAdmin(
    std::shared_ptr<grpc::Channel> channel,
    std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_ADMIN_TABLE_ADMIN_H_
