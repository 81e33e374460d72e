// Smoke test: the generated Bigtable stubs talk to the real emulator over an insecure channel.
#include <gtest/gtest.h>

#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "tests/support/emulators.h"

namespace gcpstream {
namespace {

namespace btadmin = ::google::bigtable::admin::v2;
namespace bt = ::google::bigtable::v2;
using testing::Emulator;

TEST(BigtableEmulatorSmokeTest, CreateTableMutateRowsAndReadBack) {
  auto channel = testing::EmulatorChannel(Emulator::kBigtable);
  ASSERT_NE(channel, nullptr);
  auto admin = btadmin::BigtableTableAdmin::NewStub(channel);
  auto data = bt::Bigtable::NewStub(channel);
  const std::string instance = "projects/smoke/instances/smoke";
  const std::string table_id = testing::UniqueId("smoke");

  {
    btadmin::CreateTableRequest request;
    request.set_parent(instance);
    request.set_table_id(table_id);
    (*request.mutable_table()->mutable_column_families())["cf"];
    btadmin::Table table;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Status status = admin->CreateTable(&ctx, request, &table);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  const std::string table_name = instance + "/tables/" + table_id;
  {
    bt::MutateRowsRequest request;
    request.set_table_name(table_name);
    for (int i = 0; i < 3; ++i) {
      auto* entry = request.add_entries();
      entry->set_row_key("row-" + std::to_string(i));
      auto* set = entry->add_mutations()->mutable_set_cell();
      set->set_family_name("cf");
      set->set_column_qualifier("q");
      set->set_timestamp_micros(1000 * (i + 1));
      set->set_value("value-" + std::to_string(i));
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto reader = data->MutateRows(&ctx, request);
    bt::MutateRowsResponse response;
    int answered = 0;
    while (reader->Read(&response)) {
      for (const auto& e : response.entries()) {
        EXPECT_EQ(e.status().code(), 0) << "entry " << e.index() << ": " << e.status().message();
        ++answered;
      }
    }
    grpc::Status status = reader->Finish();
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(answered, 3);
  }
  {
    bt::ReadRowsRequest request;
    request.set_table_name(table_name);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto reader = data->ReadRows(&ctx, request);
    bt::ReadRowsResponse response;
    std::vector<std::string> keys;
    std::vector<std::string> values;
    while (reader->Read(&response)) {
      for (const auto& chunk : response.chunks()) {
        if (!chunk.row_key().empty()) keys.push_back(chunk.row_key());
        if (!chunk.value().empty()) values.push_back(chunk.value());
      }
    }
    grpc::Status status = reader->Finish();
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(keys, (std::vector<std::string>{"row-0", "row-1", "row-2"}));
    EXPECT_EQ(values, (std::vector<std::string>{"value-0", "value-1", "value-2"}));
  }
}

}  // namespace
}  // namespace gcpstream
