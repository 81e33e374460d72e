#include "tests/support/emulators.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>

#include <gtest/gtest.h>

#include <fmt/format.h>

namespace gcpstream::testing {

const char* EmulatorVariable(Emulator emulator) {
  switch (emulator) {
    case Emulator::kBigtable:
      return "BIGTABLE_EMULATOR_HOST";
    case Emulator::kPubSub:
      return "PUBSUB_EMULATOR_HOST";
    case Emulator::kSpanner:
      return "SPANNER_EMULATOR_HOST";
  }
  return "";
}

std::string EmulatorEndpoint(Emulator emulator) {
  const char* name = EmulatorVariable(emulator);
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    ADD_FAILURE() << name
                  << " is not set. Start the emulators with `scripts/emulators.sh start` and "
                     "export what `scripts/emulators.sh env` prints, or run scripts/test.sh.";
    return "";
  }
  return value;
}

std::shared_ptr<grpc::Channel> EmulatorChannel(Emulator emulator) {
  std::string endpoint = EmulatorEndpoint(emulator);
  if (endpoint.empty()) return nullptr;
  return grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials());
}

std::string UniqueId(const std::string& prefix) {
  static std::atomic<int> counter{0};
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now).count() % 100000000;
  return fmt::format("{}-{}-{}-{}", prefix, getpid(), ms, counter.fetch_add(1));
}

}  // namespace gcpstream::testing
