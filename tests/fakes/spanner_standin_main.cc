// The Spanner BatchWrite stand-in as a standalone program, in front of a running Spanner
// emulator (docs/spanner.md, "Trying BatchWrite against the emulator"):
//
//   spanner_standin --emulator 127.0.0.1:9010 --port 9020
//
// then point the client at 127.0.0.1:9020 instead of the emulator. Every method reaches the
// emulator unchanged; BatchWrite is implemented by the stand-in. Fault flags:
// --fail-group-every N with --fail-code CODE (every Nth mutation group answers CODE and is not
// applied), --cut-after K (each BatchWrite stream ends UNAVAILABLE after K group results),
// --stall-after K (… or stalls until the client's deadline). It prints "listening on HOST:PORT"
// once ready and runs until SIGINT or SIGTERM.
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <map>
#include <thread>

#include "tests/fakes/spanner_standin.h"

namespace {
std::atomic<bool> g_stop{false};
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
  app.add_option("--fail-code", fail_code, "the status --fail-group-every reports")
      ->check(CLI::IsMember(codes));
  app.add_option("--cut-after", cut_after,
                 "every BatchWrite stream ends UNAVAILABLE after this many group results")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--stall-after", stall_after,
                 "every BatchWrite stream stalls after this many group results")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);

  auto standin = gcpstream::testing::SpannerStandIn::start(emulator, port);
  if (!standin.ok()) {
    std::fprintf(stderr, "spanner_standin: %s\n", std::string(standin.status().message()).c_str());
    return 1;
  }
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
