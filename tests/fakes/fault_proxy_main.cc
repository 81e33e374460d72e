// The fault-injecting gRPC proxy as a standalone program, for trying failure scenarios by hand:
//
//   fault_proxy --upstream 127.0.0.1:8086 --listen 9086
//       --rule 'method=MutateRows,action=status,code=INVALID_ARGUMENT,nth=1'
//
// Rule keys: method, action (status|forward_then_fail|delay|hang|cut|stall), code (a gRPC code
// name), nth, fraction, times, delay_ms, cut_after, message. Runs until interrupted.
#include <csignal>
#include <cstdio>
#include <map>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>

#include "tests/fakes/fault_proxy.h"

namespace {

std::atomic<bool> g_stop{false};

bool ParseCode(const std::string& name, absl::StatusCode* code) {
  for (int c = 0; c <= 16; ++c) {
    if (absl::StatusCodeToString(static_cast<absl::StatusCode>(c)) == name) {
      *code = static_cast<absl::StatusCode>(c);
      return true;
    }
  }
  return false;
}

bool ParseRule(const std::string& text, gcpstream::testing::FaultRule* rule, std::string* error) {
  using A = gcpstream::testing::FaultRule::Action;
  const std::map<std::string, A> actions = {{"status", A::kReturnStatus},
                                            {"forward_then_fail", A::kForwardThenFail},
                                            {"delay", A::kDelay},
                                            {"hang", A::kHang},
                                            {"cut", A::kCutStream},
                                            {"stall", A::kStallStream}};
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      *error = "expected key=value, got '" + item + "'";
      return false;
    }
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    try {
      if (key == "method") {
        rule->method = value;
      } else if (key == "action") {
        auto it = actions.find(value);
        if (it == actions.end()) {
          *error = "unknown action '" + value + "'";
          return false;
        }
        rule->action = it->second;
      } else if (key == "code") {
        if (!ParseCode(value, &rule->code)) {
          *error = "unknown code '" + value + "'";
          return false;
        }
      } else if (key == "nth") {
        rule->nth = std::stoi(value);
      } else if (key == "fraction") {
        rule->fraction = std::stod(value);
      } else if (key == "times") {
        rule->times = std::stoi(value);
      } else if (key == "delay_ms") {
        rule->delay = std::chrono::milliseconds(std::stoi(value));
      } else if (key == "cut_after") {
        rule->cut_after = std::stoi(value);
      } else if (key == "message") {
        rule->message = value;
      } else {
        *error = "unknown key '" + key + "'";
        return false;
      }
    } catch (const std::exception&) {
      *error = "bad value for " + key + ": '" + value + "'";
      return false;
    }
  }
  if (rule->method.empty()) {
    *error = "a rule needs method=...";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gcpstream fault-injecting gRPC proxy"};
  std::string upstream;
  int listen = 0;
  std::vector<std::string> rules;
  app.add_option("--upstream", upstream, "host:port of the real server")->required();
  app.add_option("--listen", listen, "port to listen on (0: any)");
  app.add_option("--rule", rules,
                 "a fault rule (repeatable): key=value pairs separated by commas. Keys: method, "
                 "action (status|forward_then_fail|delay|hang|cut|stall), code (a gRPC code "
                 "name), nth, fraction, times, delay_ms, cut_after, message");
  CLI11_PARSE(app, argc, argv);
  auto proxy = gcpstream::testing::FaultProxy::start(upstream, listen);
  if (!proxy.ok()) {
    std::fprintf(stderr, "%s\n", proxy.status().ToString().c_str());
    return 1;
  }
  for (const auto& text : rules) {
    gcpstream::testing::FaultRule rule;
    std::string error;
    if (!ParseRule(text, &rule, &error)) {
      std::fprintf(stderr, "bad --rule '%s': %s\n", text.c_str(), error.c_str());
      return 2;
    }
    (*proxy)->add_rule(rule);
  }
  std::signal(SIGINT, [](int) { g_stop = true; });
  std::signal(SIGTERM, [](int) { g_stop = true; });
  std::printf("fault proxy listening on %s, forwarding to %s\n", (*proxy)->endpoint().c_str(),
              upstream.c_str());
  std::fflush(stdout);
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return 0;
}
