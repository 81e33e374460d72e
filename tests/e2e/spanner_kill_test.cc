// The Spanner sink end to end: the gcpstream CLI runs examples/pipelines/flights-to-spanner.yaml
// (every flight of the vega-datasets file as a row) against the Spanner emulator through the
// BatchWrite stand-in, is killed with SIGKILL twice mid-stream, restored each time with
// --restore, and finishes. The table is then read back: every flight exactly once (the key
// holds the flight's position in the file, so the two flights sharing date, origin and
// destination are both there), with the file's values.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "gcpstream/spanner/admin/database_admin.h"
#include "google/spanner/v1/spanner.grpc.pb.h"
#include "tests/e2e/child_process.h"
#include "tests/fakes/spanner_standin.h"
#include "tests/support/emulators.h"

namespace gcpstream::e2e {
namespace {

namespace fs = std::filesystem;
namespace sp = google::spanner::v1;
using namespace std::chrono_literals;

class SpannerKillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("gcpstream-spanner-e2e-{}", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto standin =
        testing::SpannerStandIn::start(testing::EmulatorEndpoint(testing::Emulator::kSpanner));
    ASSERT_TRUE(standin.ok()) << standin.status();
    standin_ = std::move(*standin);
    db_ = connector::DatabaseDestination::of("gcpstream-e2e", testing::UniqueId("e2e"), "flights");
    spanner::DatabaseAdmin admin(
        grpc::CreateChannel(standin_->endpoint(), grpc::InsecureChannelCredentials()));
    ASSERT_TRUE(admin.CreateInstance(db_.project, db_.instance).ok());
    // The statements of examples/pipelines/flights-spanner.ddl.
    auto created = admin.CreateDatabase(
        db_, spanner::Dialect::kGoogleSql,
        {"CREATE TABLE Flights (Id STRING(64) NOT NULL, FlightDate STRING(16) NOT NULL, Origin "
         "STRING(3) NOT NULL, Destination STRING(3) NOT NULL, Delay INT64 NOT NULL, Distance "
         "INT64 NOT NULL) PRIMARY KEY (Id)",
         "CREATE INDEX FlightsByOrigin ON Flights(Origin) STORING (Delay)"});
    ASSERT_TRUE(created.ok()) << created;
    data_ = fs::path(GCPSTREAM_SOURCE_DIR) / ".deps/vega-datasets-3.2.1/data/flights-20k.json";
    ASSERT_TRUE(fs::exists(data_)) << data_ << " (scripts/setup.sh fetches it)";
    // The example pipeline itself, pointed at this test's stand-in and database.
    setenv("FLIGHTS_FILE", data_.c_str(), 1);
    setenv("GCP_PROJECT", db_.project.c_str(), 1);
    setenv("SPANNER_INSTANCE", db_.instance.c_str(), 1);
    setenv("SPANNER_DATABASE", db_.database.c_str(), 1);
    setenv("SPANNER_STANDIN_HOST", standin_->endpoint().c_str(), 1);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> Args(bool restore) {
    std::vector<std::string> args = {
        GCPSTREAM_CLI_PATH,
        "run",
        (fs::path(GCPSTREAM_SOURCE_DIR) / "examples/pipelines/flights-to-spanner.yaml").string(),
        "--checkpoint-dir",
        (dir_ / "chk").string(),
        "--checkpoint-interval",
        "300ms"};
    if (restore) args.push_back("--restore");
    return args;
  }

  // Runs the CLI until `rows` more groups were applied, then SIGKILLs it.
  void RunAndKill(bool restore, int rows) {
    const int target = standin_->groups_applied() + rows;
    const pid_t pid = Spawn(Args(restore), (dir_ / "job.log").string(), true);
    const auto deadline = std::chrono::steady_clock::now() + 120s;
    while (standin_->groups_applied() < target && std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      ASSERT_NE(waitpid(pid, &status, WNOHANG), pid) << "the job ended before it was killed, after "
                                                     << standin_->groups_applied() << " rows:\n"
                                                     << ReadFile(dir_ / "job.log");
      std::this_thread::sleep_for(2ms);
    }
    ASSERT_GE(standin_->groups_applied(), target)
        << "120 s without reaching " << target << " rows:\n"
        << ReadFile(dir_ / "job.log");
    kill(pid, SIGKILL);
    ASSERT_EQ(WaitFor(pid, 10s), 128 + SIGKILL);
  }

  // Id -> "FlightDate|Origin|Destination|Delay|Distance", read back through the stand-in.
  std::map<std::string, std::string> Table() {
    auto stub = sp::Spanner::NewStub(
        grpc::CreateChannel(standin_->endpoint(), grpc::InsecureChannelCredentials()));
    sp::CreateSessionRequest create;
    create.set_database(db_.resource_name());
    sp::Session session;
    {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + 10s);
      EXPECT_TRUE(stub->CreateSession(&ctx, create, &session).ok());
    }
    sp::ExecuteSqlRequest request;
    request.set_session(session.name());
    request.set_sql("SELECT Id, FlightDate, Origin, Destination, Delay, Distance FROM Flights");
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    auto reader = stub->ExecuteStreamingSql(&ctx, request);
    std::vector<std::string> values;
    sp::PartialResultSet part;
    std::string pending;
    while (reader->Read(&part)) {
      for (int i = 0; i < part.values_size(); ++i) {
        std::string v = pending + part.values(i).string_value();
        pending.clear();
        if (i == part.values_size() - 1 && part.chunked_value()) {
          pending = v;
        } else {
          values.push_back(std::move(v));
        }
      }
    }
    auto status = reader->Finish();
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::map<std::string, std::string> rows;
    for (std::size_t i = 0; i + 5 < values.size(); i += 6) {
      rows[values[i]] = fmt::format("{}|{}|{}|{}|{}", values[i + 1], values[i + 2], values[i + 3],
                                    values[i + 4], values[i + 5]);
    }
    return rows;
  }

  fs::path dir_;
  fs::path data_;
  connector::DatabaseDestination db_;
  std::unique_ptr<testing::SpannerStandIn> standin_;
};

TEST_F(SpannerKillTest, TwoKillsAndRestoresLeaveEveryFlightExactlyOnceWithItsValues) {
  RunAndKill(false, 3000);
  RunAndKill(true, 3000);
  const pid_t pid = Spawn(Args(true), (dir_ / "job.log").string(), true);
  ASSERT_EQ(WaitFor(pid, 300s), 0) << ReadFile(dir_ / "job.log");

  std::ifstream in(data_);
  const nlohmann::json flights = nlohmann::json::parse(in);
  ASSERT_EQ(flights.size(), 20000u);
  const auto table = Table();
  std::size_t missing = 0, wrong = 0;
  std::string first_problem;
  for (std::size_t i = 0; i < flights.size(); ++i) {
    const auto& f = flights[i];
    const std::string id =
        fmt::format("{}#{}#{}#{}", f["date"].get<std::string>(), f["origin"].get<std::string>(),
                    f["destination"].get<std::string>(), i);
    const std::string want =
        fmt::format("{}|{}|{}|{}|{}", f["date"].get<std::string>(), f["origin"].get<std::string>(),
                    f["destination"].get<std::string>(), f["delay"].get<std::int64_t>(),
                    f["distance"].get<std::int64_t>());
    auto it = table.find(id);
    if (it == table.end()) {
      if (missing++ == 0 && first_problem.empty()) first_problem = "missing " + id;
    } else if (it->second != want) {
      if (wrong++ == 0 && first_problem.empty()) {
        first_problem = "row " + id + " is " + it->second + ", want " + want;
      }
    }
  }
  EXPECT_EQ(table.size(), flights.size()) << "rows that are not flights of the file";
  EXPECT_EQ(missing, 0u) << first_problem;
  EXPECT_EQ(wrong, 0u) << first_problem;
  EXPECT_GT(standin_->groups_applied(), 20000)
      << "the restored runs replayed flights the killed ones had written (insert_or_update "
         "rewrote them)";
}

}  // namespace
}  // namespace gcpstream::e2e
