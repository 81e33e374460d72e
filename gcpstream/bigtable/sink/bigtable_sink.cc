#include "gcpstream/bigtable/sink/bigtable_sink.h"

#include "gcpstream/bigtable/admin/table_admin.h"
#include "gcpstream/bigtable/client/bigtable_stub.h"
#include "gcpstream/bigtable/client/bulk_mutation_batcher.h"

namespace gcpstream::bigtable {
namespace {

class GrpcInstanceClient final : public InstanceClient {
 public:
  GrpcInstanceClient(connector::ClientOptions client, std::shared_ptr<grpc::Channel> data,
                     std::string app_profile, BatchingThresholds thresholds,
                     MutateRowsRetrySettings retry)
      : client_(std::move(client)),
        data_(std::move(data)),
        stub_(MakeGrpcBigtableDataStub(data_)),
        app_profile_(std::move(app_profile)),
        thresholds_(thresholds),
        retry_(std::move(retry)),
        timers_(std::make_shared<util::TimerThread>()) {}

  absl::StatusOr<std::shared_ptr<MutationBatcher>> batcher(
      const connector::TableDestination& table,
      std::shared_ptr<MutationListener> listener) override {
    return std::shared_ptr<MutationBatcher>(
        std::make_shared<BulkMutationBatcher>(table.resource_name(), app_profile_, stub_,
                                              thresholds_, retry_, timers_, std::move(listener)));
  }

  absl::StatusOr<std::shared_ptr<TableAdmin>> admin() override {
    if (!admin_) {
      // The emulator serves both APIs on one endpoint; the service has its own admin endpoint.
      GCP_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                           connector::CreateChannel(client_, kBigtableAdminTarget));
      admin_ = MakeGrpcTableAdmin(std::move(channel));
    }
    return admin_;
  }

  absl::Status close() override {
    admin_.reset();
    stub_.reset();
    data_.reset();
    return absl::OkStatus();
  }

 private:
  connector::ClientOptions client_;
  std::shared_ptr<grpc::Channel> data_;
  std::shared_ptr<BigtableDataStub> stub_;
  std::string app_profile_;
  BatchingThresholds thresholds_;
  MutateRowsRetrySettings retry_;
  std::shared_ptr<util::TimerThread> timers_;
  std::shared_ptr<TableAdmin> admin_;
};

class GrpcInstanceClientFactory final : public InstanceClientFactory {
 public:
  GrpcInstanceClientFactory(connector::ClientOptions client, std::string app_profile,
                            BatchingThresholds thresholds, MutateRowsRetrySettings retry)
      : client_(std::move(client)),
        app_profile_(std::move(app_profile)),
        thresholds_(thresholds),
        retry_(std::move(retry)) {}

  absl::StatusOr<std::shared_ptr<InstanceClient>> open(const std::string&,
                                                       const std::string&) override {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(256 * 1024 * 1024);
    args.SetMaxSendMessageSize(256 * 1024 * 1024);
    GCP_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                         connector::CreateChannel(client_, kBigtableTarget, args));
    return std::shared_ptr<InstanceClient>(std::make_shared<GrpcInstanceClient>(
        client_, std::move(channel), app_profile_, thresholds_, retry_));
  }

 private:
  connector::ClientOptions client_;
  std::string app_profile_;
  BatchingThresholds thresholds_;
  MutateRowsRetrySettings retry_;
};

}  // namespace

std::shared_ptr<InstanceClientFactory> MakeGrpcInstanceClientFactory(
    connector::ClientOptions client, std::string app_profile_id, BatchingThresholds thresholds,
    MutateRowsRetrySettings retry) {
  return std::make_shared<GrpcInstanceClientFactory>(std::move(client), std::move(app_profile_id),
                                                     thresholds, std::move(retry));
}

}  // namespace gcpstream::bigtable
