#ifndef GCPSTREAM_CONNECTOR_GRPC_STATUS_H_
#define GCPSTREAM_CONNECTOR_GRPC_STATUS_H_

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"

namespace gcpstream::connector {

// grpc::Status -> absl::Status, keeping the code (the two enums share gRPC's numbering) and the
// message, so failures are classified by code.
inline absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_GRPC_STATUS_H_
