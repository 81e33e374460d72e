#ifndef GCPSTREAM_CONNECTOR_GRPC_STATUS_H_
#define GCPSTREAM_CONNECTOR_GRPC_STATUS_H_

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace gcpstream::connector {

// Where a converted status keeps the service's structured details (the serialized
// google.rpc.Status a gRPC error carries in its `grpc-status-details-bin` trailer): the payload
// type URL is that message's own.
inline constexpr char kRpcStatusPayload[] = "type.googleapis.com/google.rpc.Status";

// grpc::Status -> absl::Status, keeping the code (the two enums share gRPC's numbering), the
// message and, when the service sent any, the structured details (see RpcDetailsOf), so
// failures are classified by code and by documented detail, never by message text.
inline absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  absl::Status out(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  if (!status.error_details().empty()) {
    out.SetPayload(kRpcStatusPayload, absl::Cord(status.error_details()));
  }
  return out;
}

// google.rpc.Status (as carried inside responses: a BatchWrite group's outcome, a long-running
// operation's error, a per-row append error) -> absl::Status, keeping code, message and details.
inline absl::Status FromRpcStatus(const google::rpc::Status& status) {
  if (status.code() == 0) return absl::OkStatus();
  absl::Status out(static_cast<absl::StatusCode>(status.code()), status.message());
  if (status.details_size() > 0)
    out.SetPayload(kRpcStatusPayload, absl::Cord(status.SerializeAsString()));
  return out;
}

// The structured details a converted status kept; empty when it has none.
inline std::optional<google::rpc::Status> RpcDetailsOf(const absl::Status& status) {
  auto payload = status.GetPayload(kRpcStatusPayload);
  if (!payload) return std::nullopt;
  google::rpc::Status rpc;
  if (!rpc.ParseFromString(std::string(*payload))) return std::nullopt;
  return rpc;
}

// The ResourceInfo details of a status (google/rpc/error_details.proto: which resource a
// NOT_FOUND or ALREADY_EXISTS is about, by resource_type and resource_name).
inline std::vector<google::rpc::ResourceInfo> ResourceInfosOf(const absl::Status& status) {
  std::vector<google::rpc::ResourceInfo> out;
  auto rpc = RpcDetailsOf(status);
  if (!rpc) return out;
  for (const auto& any : rpc->details()) {
    google::rpc::ResourceInfo info;
    if (any.Is<google::rpc::ResourceInfo>() && any.UnpackTo(&info)) out.push_back(std::move(info));
  }
  return out;
}

// The delay a status asks for before a retry (google.rpc.RetryInfo in its details), if any;
// bounded to an hour, so a corrupt detail cannot park the caller for ever.
inline std::optional<std::chrono::milliseconds> RetryDelayOf(const absl::Status& status) {
  auto rpc = RpcDetailsOf(status);
  if (!rpc) return std::nullopt;
  for (const auto& any : rpc->details()) {
    google::rpc::RetryInfo info;
    if (any.Is<google::rpc::RetryInfo>() && any.UnpackTo(&info)) {
      const auto& d = info.retry_delay();
      if (d.seconds() < 0 || d.nanos() < 0) return std::nullopt;
      const std::int64_t ms =
          std::min<std::int64_t>(d.seconds(), 3600) * 1000 + d.nanos() / 1000000;
      return std::chrono::milliseconds(ms);
    }
  }
  return std::nullopt;
}

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_GRPC_STATUS_H_
