#include "gcpstream/pubsub/sink/pubsub_sink.h"

namespace gcpstream::pubsub {

absl::StatusOr<PubSubSinkClients> MakePubSubSinkClients(const connector::ClientOptions& client,
                                                        const PublisherSettings& settings) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(20 * 1024 * 1024);
  GCP_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                       connector::CreateChannel(client, kPubSubTarget, args));
  PubSubSinkClients clients;
  clients.publishers =
      std::make_shared<BatchingPublisherFactory>(MakeGrpcPublisherStub(channel), settings);
  // The admin client is opened only for a topic creation, over its own channel, and dropped
  // with it.
  clients.admin_factory = [client]() -> absl::StatusOr<std::shared_ptr<TopicAdmin>> {
    GCP_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> admin_channel,
                         connector::CreateChannel(client, kPubSubTarget));
    return MakeGrpcTopicAdmin(std::move(admin_channel));
  };
  return clients;
}

}  // namespace gcpstream::pubsub
