#include "tests/fakes/bigquery/bigquery_fake.h"

#include <fmt/format.h>
#include <httplib.h>

#include "tests/fakes/bigquery/fake_read_service.h"
#include "tests/fakes/bigquery/fake_rest_service.h"
#include "tests/fakes/bigquery/fake_write_service.h"

namespace gcpstream::testing {

absl::StatusOr<std::unique_ptr<BigQueryFake>> BigQueryFake::Start(FakeOptions options,
                                                                  int grpc_port, int rest_port,
                                                                  const std::string& host) {
  std::unique_ptr<BigQueryFake> fake(new BigQueryFake());
  fake->store_ = std::make_shared<bigquery_fake::FakeStore>();
  fake->store_->set_options(std::move(options));
  fake->write_service_ = bigquery_fake::MakeWriteService(fake->store_);
  fake->read_service_ = bigquery_fake::MakeReadService(fake->store_);
  grpc::ServerBuilder builder;
  // A port another process holds is refused, not shared (gRPC allows SO_REUSEPORT by default).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int bound = 0;
  builder.AddListeningPort(fmt::format("{}:{}", host, grpc_port), grpc::InsecureServerCredentials(),
                           &bound);
  // Above the documented 10 MB request bound, so an oversized append reaches the check that
  // answers it as the service does instead of gRPC's own limit.
  builder.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  builder.RegisterService(fake->write_service_.get());
  builder.RegisterService(fake->read_service_.get());
  fake->grpc_server_ = builder.BuildAndStart();
  if (fake->grpc_server_ == nullptr || bound == 0) {
    return absl::UnavailableError(fmt::format("cannot listen for gRPC on {}:{}", host, grpc_port));
  }
  fake->grpc_endpoint_ = fmt::format("{}:{}", host, bound);

  fake->rest_server_ = std::make_unique<httplib::Server>();
  bigquery_fake::RegisterRestRoutes(*fake->rest_server_, fake->store_);
  fake->gcs_ = std::make_shared<gcs_fake::FakeObjectStore>();
  gcs_fake::RegisterGcsRoutes(*fake->rest_server_, fake->gcs_);
  fake->jobs_ = std::make_shared<bigquery_fake::FakeJobs>(fake->store_, fake->gcs_);
  bigquery_fake::RegisterJobRoutes(*fake->rest_server_, fake->jobs_);
  const int rest_bound = rest_port == 0
                             ? fake->rest_server_->bind_to_any_port(host)
                             : (fake->rest_server_->bind_to_port(host, rest_port) ? rest_port : -1);
  if (rest_bound <= 0) {
    return absl::UnavailableError(fmt::format("cannot listen for REST on {}:{}", host, rest_port));
  }
  fake->rest_endpoint_ = fmt::format("http://{}:{}", host, rest_bound);
  fake->rest_thread_ =
      std::thread([server = fake->rest_server_.get()] { server->listen_after_bind(); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!fake->rest_server_->is_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return fake;
}

BigQueryFake::~BigQueryFake() { shutdown(); }

void BigQueryFake::shutdown() {
  if (rest_server_) rest_server_->stop();
  if (rest_thread_.joinable()) rest_thread_.join();
  if (grpc_server_) {
    grpc_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    grpc_server_.reset();
  }
}

std::string BigQueryFake::grpc_endpoint() const { return grpc_endpoint_; }
std::string BigQueryFake::rest_endpoint() const { return rest_endpoint_; }
void BigQueryFake::set_options(FakeOptions options) { store_->set_options(std::move(options)); }
void BigQueryFake::advance_clock(absl::Duration d) { store_->advance_clock(d); }

absl::Status BigQueryFake::add_dataset(const std::string& project, const std::string& dataset,
                                       const std::string& location) {
  nlohmann::json resource = {{"datasetReference", {{"datasetId", dataset}}}};
  if (!location.empty()) resource["location"] = location;
  return store_->insert_dataset(project, resource).status();
}

absl::Status BigQueryFake::add_table(const std::string& project, const std::string& dataset,
                                     const nlohmann::json& table_resource) {
  return store_->insert_table(project, dataset, table_resource).status();
}

absl::StatusOr<nlohmann::json> BigQueryFake::table(const std::string& project,
                                                   const std::string& dataset,
                                                   const std::string& table) const {
  return store_->get_table(project, dataset, table);
}

absl::Status BigQueryFake::patch_table(const std::string& project, const std::string& dataset,
                                       const std::string& table, const nlohmann::json& patch) {
  return store_->update_table(project, dataset, table, patch, false, "").status();
}

void BigQueryFake::add_bucket(const std::string& bucket) { gcs_->add_bucket(bucket); }

absl::Status BigQueryFake::delete_table(const std::string& project, const std::string& dataset,
                                        const std::string& table) {
  return store_->delete_table(project, dataset, table);
}

absl::StatusOr<std::vector<nlohmann::json>> BigQueryFake::rows(
    const std::string& table_path) const {
  return store_->rows(table_path);
}

absl::Status BigQueryFake::insert_rows(const std::string& table_path,
                                       std::vector<nlohmann::json> rows) {
  return store_->insert_rows(table_path, std::move(rows));
}

std::int64_t BigQueryFake::streams_created() const { return store_->streams_created(); }
std::int64_t BigQueryFake::rows_appended() const { return store_->rows_appended(); }

}  // namespace gcpstream::testing
