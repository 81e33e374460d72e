#ifndef GCPSTREAM_BIGTABLE_CLIENT_BIGTABLE_STUB_H_
#define GCPSTREAM_BIGTABLE_CLIENT_BIGTABLE_STUB_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/connector/request_batcher.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"

namespace gcpstream::bigtable {

// What one MutateRows call answered: a status per entry it reported (by index in the request),
// then the status of the call itself. Entries the stream never reported have no status.
using MutateRowsResult = connector::BatchCallResult;

// The seam under the mutation batcher: one MutateRows call, asynchronously. Thread-safe.
class BigtableDataStub {
 public:
  virtual ~BigtableDataStub() = default;
  // `done` runs exactly once, on an arbitrary thread. The request is shared, not copied; it must
  // not change until `done` ran. The returned function cancels the call (best effort).
  virtual std::function<void()> async_mutate_rows(
      std::shared_ptr<const google::bigtable::v2::MutateRowsRequest> request,
      std::chrono::milliseconds timeout, std::function<void(MutateRowsResult)> done) = 0;

  // Single-row transactions: one attempt each, `timeout` its whole deadline, never retried here
  // (neither RPC is idempotent in general). `done` runs exactly once, on an arbitrary thread,
  // with the response or the call's status (gRPC code kept). The returned function cancels the
  // call (best effort). Stubs that do not serve them answer UNIMPLEMENTED.
  virtual std::function<void()> async_check_and_mutate_row(
      std::shared_ptr<const google::bigtable::v2::CheckAndMutateRowRequest> request,
      std::chrono::milliseconds timeout,
      std::function<void(absl::StatusOr<google::bigtable::v2::CheckAndMutateRowResponse>)> done);
  virtual std::function<void()> async_read_modify_write_row(
      std::shared_ptr<const google::bigtable::v2::ReadModifyWriteRowRequest> request,
      std::chrono::milliseconds timeout,
      std::function<void(absl::StatusOr<google::bigtable::v2::ReadModifyWriteRowResponse>)> done);
};

std::shared_ptr<BigtableDataStub> MakeGrpcBigtableDataStub(std::shared_ptr<grpc::Channel> channel);

absl::Status FromGrpc(const grpc::Status& status);
absl::Status FromRpcStatus(const google::rpc::Status& status);

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CLIENT_BIGTABLE_STUB_H_
