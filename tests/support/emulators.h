#ifndef GCPSTREAM_TESTS_SUPPORT_EMULATORS_H_
#define GCPSTREAM_TESTS_SUPPORT_EMULATORS_H_

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

namespace gcpstream::testing {

// The emulators integration tests talk to. The library never reads emulator hosts from the
// environment; tests do, here, and pass the endpoint explicitly. scripts/test.sh (through
// scripts/emulators.sh) starts the emulators and exports these variables.
enum class Emulator { kBigtable, kPubSub, kSpanner };

// Name of the environment variable holding the emulator's host:port.
const char* EmulatorVariable(Emulator emulator);

// The emulator's host:port. Fails the current test (fatally, via ADD_FAILURE + empty return)
// with instructions when the variable is not set.
std::string EmulatorEndpoint(Emulator emulator);

// An insecure channel to the emulator; null (after a test failure) when not configured.
std::shared_ptr<grpc::Channel> EmulatorChannel(Emulator emulator);

// A resource id unique to this process and call, e.g. "smoke-4711-3". Emulator state outlives a
// test binary, so every test names its resources with this.
std::string UniqueId(const std::string& prefix);

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_EMULATORS_H_
