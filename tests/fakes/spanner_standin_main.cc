// The Spanner BatchWrite stand-in as a standalone program, in front of a running Spanner
// emulator (docs/spanner.md, "Trying BatchWrite against the emulator"):
//
//   spanner_standin --emulator 127.0.0.1:9010 --port 9020
//
// then point the client at 127.0.0.1:9020 instead of the emulator. Every method reaches the
// emulator unchanged; BatchWrite is implemented by the stand-in. Fault flags:
// --fail-group-every N with --fail-code CODE (every Nth mutation group answers CODE and is not
// applied), --cut-after K (each BatchWrite stream ends UNAVAILABLE after K group results),
// --stall-after K (… or stalls until the client's deadline). With --database
// projects/P/instances/I/databases/D (and --ddl-file F, --dialect), it first creates the
// instance and the database with F's statements (separated by ';', "--" comments ignored);
// ones that exist already are kept as they are. It prints "listening on HOST:PORT" once ready
// and runs until SIGINT or SIGTERM.
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "gcpstream/spanner/admin/database_admin.h"
#include "tests/fakes/spanner_standin.h"

namespace {
std::atomic<bool> g_stop{false};

// The statements of a DDL file: split at ';', "--" comment lines dropped, blanks skipped.
std::vector<std::string> ReadDdl(const std::string& path, bool* ok) {
  std::ifstream in(path);
  *ok = static_cast<bool>(in);
  std::string text, line;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line.compare(first, 2, "--") == 0) continue;
    text += line + "\n";
  }
  std::vector<std::string> out;
  std::stringstream parts(text);
  std::string statement;
  while (std::getline(parts, statement, ';')) {
    const auto b = statement.find_first_not_of(" \t\n");
    if (b == std::string::npos) continue;
    const auto e = statement.find_last_not_of(" \t\n");
    out.push_back(statement.substr(b, e - b + 1));
  }
  return out;
}

// Creates the instance and the database named `name` with `ddl`; existing ones are kept.
int CreateDatabase(const std::string& emulator, const std::string& name,
                   const std::vector<std::string>& ddl, gcpstream::spanner::Dialect dialect) {
  std::vector<std::string> parts;
  std::stringstream in(name);
  for (std::string p; std::getline(in, p, '/');) parts.push_back(p);
  if (parts.size() != 6 || parts[0] != "projects" || parts[2] != "instances" ||
      parts[4] != "databases") {
    std::fprintf(stderr,
                 "spanner_standin: --database %s is not projects/P/instances/I/databases/D\n",
                 name.c_str());
    return 2;
  }
  const auto db = gcpstream::connector::DatabaseDestination::of(parts[1], parts[3], parts[5]);
  if (auto s = gcpstream::spanner::ValidateDatabaseDestination(db); !s.ok()) {
    std::fprintf(stderr, "spanner_standin: --database: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  gcpstream::spanner::DatabaseAdmin admin(
      grpc::CreateChannel(emulator, grpc::InsecureChannelCredentials()));
  absl::Status s = admin.CreateInstance(db.project, db.instance);
  if (!s.ok() && s.code() != absl::StatusCode::kAlreadyExists) {
    std::fprintf(stderr, "spanner_standin: creating the instance: %s\n",
                 s.ToString(absl::StatusToStringMode::kWithNoExtraData).c_str());
    return 1;
  }
  s = admin.CreateDatabase(db, dialect, ddl);
  if (s.code() == absl::StatusCode::kAlreadyExists) {
    std::printf("spanner_standin: database %s exists; kept as it is\n", name.c_str());
  } else if (!s.ok()) {
    std::fprintf(stderr, "spanner_standin: creating the database: %s\n",
                 s.ToString(absl::StatusToStringMode::kWithNoExtraData).c_str());
    return 1;
  } else {
    std::printf("spanner_standin: created %s (%zu DDL statements)\n", name.c_str(), ddl.size());
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Spanner emulator front with a BatchWrite implementation (google.spanner.v1)"};
  std::string emulator;
  int port = 0;
  int fail_every = 0;
  std::string fail_code = "ABORTED";
  int cut_after = -1;
  int stall_after = -1;
  const std::map<std::string, absl::StatusCode> codes = {
      {"ABORTED", absl::StatusCode::kAborted},
      {"ALREADY_EXISTS", absl::StatusCode::kAlreadyExists},
      {"DEADLINE_EXCEEDED", absl::StatusCode::kDeadlineExceeded},
      {"FAILED_PRECONDITION", absl::StatusCode::kFailedPrecondition},
      {"INTERNAL", absl::StatusCode::kInternal},
      {"INVALID_ARGUMENT", absl::StatusCode::kInvalidArgument},
      {"NOT_FOUND", absl::StatusCode::kNotFound},
      {"OUT_OF_RANGE", absl::StatusCode::kOutOfRange},
      {"PERMISSION_DENIED", absl::StatusCode::kPermissionDenied},
      {"RESOURCE_EXHAUSTED", absl::StatusCode::kResourceExhausted},
      {"UNAVAILABLE", absl::StatusCode::kUnavailable},
  };
  app.add_option("--emulator", emulator, "host:port of the Spanner emulator")->required();
  app.add_option("--port", port, "port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--fail-group-every", fail_every,
                 "every Nth mutation group answers --fail-code instead of being applied (0: none)")
      ->check(CLI::NonNegativeNumber);
  auto* fail_code_option =
      app.add_option("--fail-code", fail_code, "the status --fail-group-every reports")
          ->check(CLI::IsMember(codes));
  app.add_option("--cut-after", cut_after,
                 "every BatchWrite stream ends UNAVAILABLE after this many group results")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--stall-after", stall_after,
                 "every BatchWrite stream stalls after this many group results")
      ->check(CLI::NonNegativeNumber);
  bool no_apply = false;
  app.add_flag("--no-apply", no_apply,
               "answer every group OK without committing it (measuring a client's own cost)");
  std::string database;
  std::string ddl_file;
  std::string dialect = "GOOGLE_STANDARD_SQL";
  app.add_option("--database", database,
                 "create this database (projects/P/instances/I/databases/D) at start");
  app.add_option("--ddl-file", ddl_file, "DDL statements for --database, separated by ';'");
  app.add_option("--dialect", dialect, "dialect of --database")
      ->check(CLI::IsMember({"GOOGLE_STANDARD_SQL", "POSTGRESQL"}));
  CLI11_PARSE(app, argc, argv);
  if (fail_code_option->count() > 0 && fail_every == 0) {
    std::fprintf(stderr, "spanner_standin: --fail-code needs --fail-group-every N (N >= 1)\n");
    return 2;
  }
  if (!ddl_file.empty() && database.empty()) {
    std::fprintf(stderr, "spanner_standin: --ddl-file needs --database\n");
    return 2;
  }
  if (!database.empty()) {
    std::vector<std::string> ddl;
    if (!ddl_file.empty()) {
      bool ok = false;
      ddl = ReadDdl(ddl_file, &ok);
      if (!ok) {
        std::fprintf(stderr, "spanner_standin: cannot read --ddl-file %s\n", ddl_file.c_str());
        return 2;
      }
    }
    if (int rc = CreateDatabase(emulator, database, ddl,
                                dialect == "POSTGRESQL" ? gcpstream::spanner::Dialect::kPostgreSql
                                                        : gcpstream::spanner::Dialect::kGoogleSql);
        rc != 0) {
      return rc;
    }
  }

  auto standin = gcpstream::testing::SpannerStandIn::start(emulator, port);
  if (!standin.ok()) {
    std::fprintf(stderr, "spanner_standin: %s\n", std::string(standin.status().message()).c_str());
    return 1;
  }
  if (no_apply) (*standin)->set_apply_groups(false);
  if (fail_every > 0) {
    auto counter = std::make_shared<std::atomic<long>>(0);
    const absl::StatusCode code = codes.at(fail_code);
    (*standin)->set_group_hook(
        [counter, fail_every, code](const auto&, int) -> std::optional<absl::Status> {
          if (++*counter % fail_every != 0) return std::nullopt;
          return absl::Status(code, "injected by spanner_standin --fail-group-every");
        });
  }
  using Action = gcpstream::testing::FaultRule::Action;
  if (cut_after >= 0 || stall_after >= 0) {
    gcpstream::testing::FaultRule rule;
    rule.method = "/google.spanner.v1.Spanner/BatchWrite";
    rule.action = cut_after >= 0 ? Action::kCutStream : Action::kStallStream;
    rule.cut_after = cut_after >= 0 ? cut_after : stall_after;
    rule.message = "injected by spanner_standin";
    (*standin)->proxy().add_rule(rule);
  }
  std::signal(SIGINT, [](int) { g_stop = true; });
  std::signal(SIGTERM, [](int) { g_stop = true; });
  std::printf("spanner_standin listening on %s\n", (*standin)->endpoint().c_str());
  std::fflush(stdout);
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return 0;
}
