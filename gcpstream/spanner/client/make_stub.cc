#include "gcpstream/spanner/client/make_stub.h"

#include "gcpstream/api/status_macros.h"

namespace gcpstream::spanner {

absl::StatusOr<std::shared_ptr<SpannerStub>> MakeSpannerStub(
    const connector::ClientOptions& client) {
  grpc::ChannelArguments args;
  GCP_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                       connector::CreateChannel(client, kSpannerTarget, args));
  return MakeGrpcSpannerStub(std::move(channel));
}

}  // namespace gcpstream::spanner
