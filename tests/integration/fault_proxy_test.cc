// The fault proxy between a client and the Bigtable emulator: pass-through, an injected status,
// a request applied by the server whose answer is dropped (the ambiguous case), a hang, and a
// stream cut short.
#include "tests/fakes/fault_proxy.h"

#include <gtest/gtest.h>

#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "tests/support/emulators.h"

namespace gcpstream::testing {
namespace {

namespace bt = ::google::bigtable::v2;
namespace btadmin = ::google::bigtable::admin::v2;
using namespace std::chrono_literals;

class FaultProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string emulator = EmulatorEndpoint(Emulator::kBigtable);
    ASSERT_FALSE(emulator.empty());
    auto proxy = FaultProxy::start(emulator);
    ASSERT_TRUE(proxy.ok()) << proxy.status();
    proxy_ = std::move(*proxy);
    direct_ = bt::Bigtable::NewStub(EmulatorChannel(Emulator::kBigtable));
    via_proxy_ = bt::Bigtable::NewStub(
        grpc::CreateChannel(proxy_->endpoint(), grpc::InsecureChannelCredentials()));
    auto admin = btadmin::BigtableTableAdmin::NewStub(
        grpc::CreateChannel(proxy_->endpoint(), grpc::InsecureChannelCredentials()));
    table_id_ = UniqueId("proxy");
    btadmin::CreateTableRequest request;
    request.set_parent(kInstance);
    request.set_table_id(table_id_);
    (*request.mutable_table()->mutable_column_families())["cf"];
    btadmin::Table table;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    grpc::Status s = admin->CreateTable(&ctx, request, &table);
    ASSERT_TRUE(s.ok()) << "CreateTable through the proxy: " << s.error_message();
  }

  std::string table_name() const { return std::string(kInstance) + "/tables/" + table_id_; }

  // MutateRows of one row; returns the RPC status and, via `entry_code`, the entry's.
  grpc::Status Write(bt::Bigtable::Stub& stub, const std::string& row, int* entry_code,
                     std::chrono::milliseconds deadline = 10s) {
    bt::MutateRowsRequest request;
    request.set_table_name(table_name());
    auto* entry = request.add_entries();
    entry->set_row_key(row);
    auto* set = entry->add_mutations()->mutable_set_cell();
    set->set_family_name("cf");
    set->set_column_qualifier("q");
    set->set_timestamp_micros(1000);
    set->set_value("v");
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    auto reader = stub.MutateRows(&ctx, request);
    bt::MutateRowsResponse response;
    *entry_code = -1;
    while (reader->Read(&response)) {
      for (const auto& e : response.entries()) *entry_code = e.status().code();
    }
    return reader->Finish();
  }

  // Row keys in the table, read directly from the emulator.
  std::vector<std::string> Rows() {
    bt::ReadRowsRequest request;
    request.set_table_name(table_name());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    auto reader = direct_->ReadRows(&ctx, request);
    bt::ReadRowsResponse response;
    std::vector<std::string> keys;
    while (reader->Read(&response)) {
      for (const auto& c : response.chunks()) {
        if (!c.row_key().empty()) keys.push_back(c.row_key());
      }
    }
    EXPECT_TRUE(reader->Finish().ok());
    return keys;
  }

  static constexpr char kInstance[] = "projects/proxy/instances/proxy";
  std::unique_ptr<FaultProxy> proxy_;
  std::unique_ptr<bt::Bigtable::Stub> direct_;
  std::unique_ptr<bt::Bigtable::Stub> via_proxy_;
  std::string table_id_;
};

// gRPC listens with SO_REUSEPORT unless told otherwise: a second proxy on the same port would
// start "fine" and take some of the first one's calls. It must refuse the port instead.
TEST_F(FaultProxyTest, RefusesAPortAlreadyInUse) {
  const std::string endpoint = proxy_->endpoint();
  const int port = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
  auto second = FaultProxy::start(EmulatorEndpoint(Emulator::kBigtable), port);
  ASSERT_FALSE(second.ok()) << "a second proxy shares port " << port;
  EXPECT_NE(second.status().message().find("in use"), std::string::npos) << second.status();
}

TEST_F(FaultProxyTest, PassesCallsThroughUnchanged) {
  int entry_code = -1;
  grpc::Status s = Write(*via_proxy_, "row-1", &entry_code);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(entry_code, 0);
  EXPECT_EQ(Rows(), (std::vector<std::string>{"row-1"}));
  EXPECT_EQ(proxy_->calls("MutateRows"), 1);
}

TEST_F(FaultProxyTest, ReturnsAnInjectedStatusWithoutForwarding) {
  FaultRule rule;
  rule.method = "MutateRows";
  rule.nth = 1;
  rule.code = absl::StatusCode::kInvalidArgument;
  proxy_->add_rule(rule);
  int entry_code = -1;
  grpc::Status s = Write(*via_proxy_, "row-1", &entry_code);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(Rows().empty()) << "the emulator never saw the request";
  // Only the first call is affected.
  s = Write(*via_proxy_, "row-2", &entry_code);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(Rows(), (std::vector<std::string>{"row-2"}));
}

TEST_F(FaultProxyTest, AppliesTheRequestThenDropsTheAnswer) {
  FaultRule rule;
  rule.method = "/google.bigtable.v2.Bigtable/MutateRows";
  rule.action = FaultRule::Action::kForwardThenFail;
  rule.code = absl::StatusCode::kUnavailable;
  proxy_->add_rule(rule);
  int entry_code = -1;
  grpc::Status s = Write(*via_proxy_, "row-applied", &entry_code);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(entry_code, -1) << "no entry status reached the client";
  EXPECT_EQ(Rows(), (std::vector<std::string>{"row-applied"})) << "but the server applied it";
}

TEST_F(FaultProxyTest, HangsUntilTheClientsDeadline) {
  FaultRule rule;
  rule.method = "MutateRows";
  rule.action = FaultRule::Action::kHang;
  proxy_->add_rule(rule);
  int entry_code = -1;
  const auto start = std::chrono::steady_clock::now();
  grpc::Status s = Write(*via_proxy_, "row-1", &entry_code, 300ms);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 250ms);
}

TEST_F(FaultProxyTest, DelaysThenForwards) {
  FaultRule rule;
  rule.method = "MutateRows";
  rule.action = FaultRule::Action::kDelay;
  rule.delay = 200ms;
  proxy_->add_rule(rule);
  int entry_code = -1;
  const auto start = std::chrono::steady_clock::now();
  grpc::Status s = Write(*via_proxy_, "row-late", &entry_code);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 190ms);
  EXPECT_EQ(Rows(), (std::vector<std::string>{"row-late"}));
}

TEST_F(FaultProxyTest, CutsAStreamAfterKMessages) {
  for (int i = 0; i < 300; ++i) {
    int code = -1;
    ASSERT_TRUE(Write(*direct_, "row-" + std::to_string(1000 + i), &code).ok());
  }
  FaultRule rule;
  rule.method = "ReadRows";
  rule.action = FaultRule::Action::kCutStream;
  rule.cut_after = 1;
  rule.code = absl::StatusCode::kUnavailable;
  proxy_->add_rule(rule);
  bt::ReadRowsRequest request;
  request.set_table_name(table_name());
  request.set_rows_limit(300);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  auto reader = via_proxy_->ReadRows(&ctx, request);
  bt::ReadRowsResponse response;
  int messages = 0;
  while (reader->Read(&response)) ++messages;
  grpc::Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(messages, 1);
}

}  // namespace
}  // namespace gcpstream::testing
