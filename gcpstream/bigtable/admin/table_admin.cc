#include "gcpstream/bigtable/admin/table_admin.h"

#include "gcpstream/bigtable/client/bigtable_stub.h"

namespace gcpstream::bigtable {
namespace {

namespace admin = ::google::bigtable::admin::v2;

class GrpcTableAdmin final : public TableAdmin {
 public:
  GrpcTableAdmin(std::shared_ptr<grpc::Channel> channel, std::chrono::milliseconds timeout)
      : stub_(admin::BigtableTableAdmin::NewStub(std::move(channel))), timeout_(timeout) {}

  void async_create_table(const connector::TableDestination& table,
                          const TableCreateOptions& options,
                          std::function<void(absl::Status)> done) override {
    struct Call {
      grpc::ClientContext context;
      admin::CreateTableRequest request;
      admin::Table response;
    };
    auto call = std::make_shared<Call>();
    call->request.set_parent(table.instance_name());
    call->request.set_table_id(table.table);
    *call->request.mutable_table() = options.table_proto();
    call->context.set_deadline(std::chrono::system_clock::now() + timeout_);
    stub_->async()->CreateTable(
        &call->context, &call->request, &call->response,
        [call, done = std::move(done)](grpc::Status s) { done(FromGrpc(s)); });
  }

  void async_get_table(const connector::TableDestination& table,
                       std::function<void(absl::StatusOr<admin::Table>)> done) override {
    struct Call {
      grpc::ClientContext context;
      admin::GetTableRequest request;
      admin::Table response;
    };
    auto call = std::make_shared<Call>();
    call->request.set_name(table.resource_name());
    call->request.set_view(admin::Table::SCHEMA_VIEW);
    call->context.set_deadline(std::chrono::system_clock::now() + timeout_);
    stub_->async()->GetTable(&call->context, &call->request, &call->response,
                             [call, done = std::move(done)](grpc::Status s) {
                               if (s.ok()) {
                                 done(std::move(call->response));
                               } else {
                                 done(FromGrpc(s));
                               }
                             });
  }

  void async_add_families(const connector::TableDestination& table,
                          const std::vector<std::string>& families,
                          const TableCreateOptions& options,
                          std::function<void(absl::Status)> done) override {
    struct Call {
      grpc::ClientContext context;
      admin::ModifyColumnFamiliesRequest request;
      admin::Table response;
    };
    auto call = std::make_shared<Call>();
    call->request.set_name(table.resource_name());
    for (const auto& f : families) {
      auto* m = call->request.add_modifications();
      m->set_id(f);
      *m->mutable_create() = options.family_proto(f);
    }
    call->context.set_deadline(std::chrono::system_clock::now() + timeout_);
    stub_->async()->ModifyColumnFamilies(
        &call->context, &call->request, &call->response,
        [call, done = std::move(done)](grpc::Status s) { done(FromGrpc(s)); });
  }

 private:
  std::unique_ptr<admin::BigtableTableAdmin::Stub> stub_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

std::shared_ptr<TableAdmin> MakeGrpcTableAdmin(std::shared_ptr<grpc::Channel> channel,
                                               std::chrono::milliseconds timeout) {
  return std::make_shared<GrpcTableAdmin>(std::move(channel), timeout);
}

}  // namespace gcpstream::bigtable
