#include "gcpstream/tasks/sink/cloud_tasks_sink.h"

#include <vector>

namespace gcpstream::tasks {

absl::StatusOr<std::shared_ptr<CloudTasksStub>> MakeCloudTasksStub(
    const connector::ClientOptions& client, const CloudTasksWriterOptions& options) {
  const int pool = client.emulator_endpoint() ? 1 : options.channel_pool_size.value_or(1);
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int i = 0; i < pool; ++i) {
    grpc::ChannelArguments args;
    // Distinct channels, not one shared subchannel: each carries its own ~100 streams.
    args.SetInt("grpc.channel_pool_index", i);
    GCP_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                         connector::CreateChannel(client, kCloudTasksTarget, args));
    channels.push_back(std::move(channel));
  }
  return MakeGrpcCloudTasksStub(std::move(channels));
}

}  // namespace gcpstream::tasks
