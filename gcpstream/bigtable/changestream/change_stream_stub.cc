#include "gcpstream/bigtable/changestream/bigtable_change_stream_source.h"
#include "gcpstream/bigtable/sink/bigtable_sink.h"

namespace gcpstream::bigtable {

BigtableAdminStubFactory MakeChangeStreamAdminStubFactory(connector::ClientOptions client) {
  return [client = std::move(client)]()
             -> absl::StatusOr<
                 std::shared_ptr<google::bigtable::admin::v2::BigtableTableAdmin::StubInterface>> {
    // The emulator (and the fake) serve both APIs on one endpoint; the service has its own.
    GCP_ASSIGN_OR_RETURN(
        std::shared_ptr<grpc::Channel> channel,
        connector::CreateChannel(client, kBigtableAdminTarget, grpc::ChannelArguments(),
                                 connector::CallApi::kBlockingOnly));
    return std::shared_ptr<google::bigtable::admin::v2::BigtableTableAdmin::StubInterface>(
        google::bigtable::admin::v2::BigtableTableAdmin::NewStub(channel));
  };
}

}  // namespace gcpstream::bigtable
