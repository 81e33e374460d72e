#include "gcpstream/bigquery/sink/bigquery_sink.h"

#include "absl/random/random.h"

namespace gcpstream::bigquery {

absl::StatusOr<std::shared_ptr<BigQueryWriteStub>> MakeBigQueryWriteStub(
    const connector::ClientOptions& client) {
  grpc::ChannelArguments args;
  // Above the 10 MB request bound, so the service (not the channel) refuses an oversized one.
  args.SetMaxSendMessageSize(16 * 1024 * 1024);
  GCP_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                       connector::CreateChannel(client, kBigQueryStorageTarget, args,
                                                connector::CallApi::kBlockingOnly));
  return MakeGrpcBigQueryWriteStub(std::move(channel));
}

absl::StatusOr<std::shared_ptr<gcs::StorageClient>> MakeStorageClient(
    const connector::ClientOptions& client, const std::optional<std::string>& emulator_rest) {
  if (emulator_rest) {
    return std::make_shared<gcs::StorageClient>(*emulator_rest, connector::MakeNoCredentials());
  }
  GCP_ASSIGN_OR_RETURN(std::shared_ptr<connector::AccessTokenSource> credentials,
                       connector::MakeAccessTokenSource(client));
  return std::make_shared<gcs::StorageClient>(gcs::kStorageEndpoint, std::move(credentials));
}

std::string NewStagingRunId() {
  absl::BitGen gen;
  return fmt::format("{:016x}", absl::Uniform<std::uint64_t>(gen));
}

}  // namespace gcpstream::bigquery
