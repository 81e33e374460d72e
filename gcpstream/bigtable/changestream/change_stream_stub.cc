#include "gcpstream/bigtable/changestream/bigtable_change_stream_source.h"
#include "gcpstream/bigtable/sink/bigtable_sink.h"

namespace gcpstream::bigtable {

absl::Status ValidateAppProfileId(std::string_view id) {
  auto word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  bool ok = !id.empty() && id.size() <= 50 && word(id.front());
  for (char c : id) ok = ok && (word(c) || c == '-' || c == '.');
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "BigtableChangeStreamSource: app_profile_id must start with a letter, digit or '_' and "
      "hold only letters, digits, '_', '-' and '.', at most 50 characters");
}

BigtableStubFactory MakeChangeStreamStubFactory(connector::ClientOptions client) {
  return [client = std::move(client)]()
             -> absl::StatusOr<std::shared_ptr<google::bigtable::v2::Bigtable::StubInterface>> {
    grpc::ChannelArguments args;
    // A chunked SetCell arrives in several messages; one message stays well below this.
    args.SetMaxReceiveMessageSize(256 << 20);
    GCP_ASSIGN_OR_RETURN(
        std::shared_ptr<grpc::Channel> channel,
        connector::CreateChannel(client, kBigtableTarget, args, connector::CallApi::kBlockingOnly));
    return std::shared_ptr<google::bigtable::v2::Bigtable::StubInterface>(
        google::bigtable::v2::Bigtable::NewStub(channel));
  };
}

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
