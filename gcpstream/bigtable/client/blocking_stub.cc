#include "gcpstream/bigtable/client/blocking_stub.h"

#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigtable/sink/bigtable_sink.h"

namespace gcpstream::bigtable {

BigtableStubFactory MakeBlockingBigtableStubFactory(connector::ClientOptions client) {
  return [client = std::move(client)]()
             -> absl::StatusOr<std::shared_ptr<google::bigtable::v2::Bigtable::StubInterface>> {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(256 << 20);
    GCP_ASSIGN_OR_RETURN(
        std::shared_ptr<grpc::Channel> channel,
        connector::CreateChannel(client, kBigtableTarget, args, connector::CallApi::kBlockingOnly));
    return std::shared_ptr<google::bigtable::v2::Bigtable::StubInterface>(
        google::bigtable::v2::Bigtable::NewStub(channel));
  };
}

}  // namespace gcpstream::bigtable
