#include "tests/support/bigtable_emulator.h"

#include <chrono>

namespace gcpstream::testing {
namespace {

namespace bt = ::google::bigtable::v2;
namespace btadmin = ::google::bigtable::admin::v2;

void SetDeadline(grpc::ClientContext& ctx) {
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
}

absl::Status ToAbsl(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

}  // namespace

BigtableEmulatorClient::BigtableEmulatorClient(const std::string& endpoint) {
  auto channel = grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials());
  data_ = bt::Bigtable::NewStub(channel);
  admin_ = btadmin::BigtableTableAdmin::NewStub(channel);
}

absl::Status BigtableEmulatorClient::create_table(
    const std::string& table_name, const std::map<std::string, btadmin::ColumnFamily>& families) {
  const auto slash = table_name.rfind("/tables/");
  btadmin::CreateTableRequest request;
  request.set_parent(table_name.substr(0, slash));
  request.set_table_id(table_name.substr(slash + 8));
  for (const auto& [name, family] : families) {
    (*request.mutable_table()->mutable_column_families())[name] = family;
  }
  btadmin::Table table;
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  return ToAbsl(admin_->CreateTable(&ctx, request, &table));
}

absl::StatusOr<btadmin::Table> BigtableEmulatorClient::get_table(const std::string& table_name) {
  btadmin::GetTableRequest request;
  request.set_name(table_name);
  request.set_view(btadmin::Table::SCHEMA_VIEW);
  btadmin::Table table;
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  grpc::Status s = admin_->GetTable(&ctx, request, &table);
  if (!s.ok()) return ToAbsl(s);
  return table;
}

absl::StatusOr<std::map<std::string, std::vector<BigtableCell>>> BigtableEmulatorClient::read_rows(
    const std::string& table_name) {
  bt::ReadRowsRequest request;
  request.set_table_name(table_name);
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  auto reader = data_->ReadRows(&ctx, request);
  std::map<std::string, std::vector<BigtableCell>> rows;
  std::vector<BigtableCell> row;
  std::string key;
  BigtableCell cell;
  bool continuing = false;  // the previous chunk split a value (value_size > 0)
  bt::ReadRowsResponse response;
  while (reader->Read(&response)) {
    for (const auto& chunk : response.chunks()) {
      if (chunk.reset_row()) {
        row.clear();
        cell = {};
        continuing = false;
        continue;
      }
      if (!chunk.row_key().empty()) key = chunk.row_key();
      if (!continuing) {
        // A new cell: family and qualifier carry over from the previous cell unless present.
        if (chunk.has_family_name()) cell.family = chunk.family_name().value();
        if (chunk.has_qualifier()) cell.qualifier = chunk.qualifier().value();
        cell.timestamp_micros = chunk.timestamp_micros();
        cell.value.clear();
      }
      cell.value += chunk.value();
      continuing = chunk.value_size() > 0;
      if (!continuing) row.push_back(cell);
      if (chunk.commit_row()) {
        rows[key] = std::move(row);
        row.clear();
      }
    }
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return ToAbsl(s);
  return rows;
}

BigtableEmulatorClient::MutateResult BigtableEmulatorClient::mutate_rows(
    const bt::MutateRowsRequest& request) {
  MutateResult result;
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  auto reader = data_->MutateRows(&ctx, request);
  bt::MutateRowsResponse response;
  while (reader->Read(&response)) {
    for (const auto& e : response.entries()) result.entries[e.index()] = e.status();
  }
  result.rpc = reader->Finish();
  return result;
}

grpc::Status BigtableEmulatorClient::mutate_row(const bt::MutateRowRequest& request) {
  bt::MutateRowResponse response;
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  return data_->MutateRow(&ctx, request, &response);
}

}  // namespace gcpstream::testing
