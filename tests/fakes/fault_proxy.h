#ifndef GCPSTREAM_TESTS_FAKES_FAULT_PROXY_H_
#define GCPSTREAM_TESTS_FAKES_FAULT_PROXY_H_

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gcpstream::testing {

// One fault: which calls it affects and what happens to them.
struct FaultRule {
  enum class Action {
    kReturnStatus,     // answer with `code` at once, without forwarding
    kForwardThenFail,  // forward the whole call (the server applies it), drop the answer,
                       // return `code` (UNAVAILABLE / DEADLINE_EXCEEDED: the ambiguous case)
    kDelay,            // wait `delay`, then forward normally
    kHang,             // never answer; end only when the client cancels (or its deadline)
    kCutStream,        // forward, but after `cut_after` response messages end with `code`
    kStallStream,      // forward `cut_after` response messages, then cancel the upstream call
                       // and send nothing more: the client's call stays open until the client
                       // cancels it (its deadline). A server that stalls mid-stream.
  };
  // Matches the full method name ("/google.bigtable.v2.Bigtable/MutateRows") or its last
  // component ("MutateRows").
  std::string method;
  Action action = Action::kReturnStatus;
  // Which matching calls: the `nth` (1-based) only; or, when nth is 0, each with probability
  // `fraction`. At most `times` calls are affected (-1: no limit).
  int nth = 0;
  double fraction = 1.0;
  int times = -1;
  absl::StatusCode code = absl::StatusCode::kUnavailable;
  std::string message = "injected by the fault proxy";
  std::chrono::milliseconds delay{0};
  int cut_after = 0;
};

// A gRPC proxy between a client and a real server (an emulator) that injects faults the server
// cannot produce. Generic: it forwards any method as raw bytes (gRPC's callback generic service
// and generic stub), so it needs no per-API code. Rules can be added and cleared while it runs.
// Thread-safe.
class FaultProxy {
 public:
  // Listens on 127.0.0.1:`port` (0: any free port) and forwards to `upstream` (host:port).
  static absl::StatusOr<std::unique_ptr<FaultProxy>> start(const std::string& upstream,
                                                           int port = 0);
  ~FaultProxy();

  // host:port clients connect to.
  std::string endpoint() const;
  // Forwards calls of `method` (full name, "/google.spanner.v1.Spanner/BatchWrite") to
  // `upstream` instead of the proxy's own upstream: how a stand-in supplies one method an
  // emulator lacks while everything else still reaches the emulator. Set before clients call.
  void route(const std::string& method, const std::string& upstream);
  void add_rule(FaultRule rule);
  void clear_rules();
  // Calls seen for a method (full name or last component), faulted or not.
  int calls(const std::string& method) const;
  // Calls a rule affected.
  int faults() const { return faults_.load(); }

  // Internal: the decision for a new call of `method`.
  struct Decision {
    bool faulted = false;
    FaultRule rule;
  };
  Decision decide(const std::string& method);
  grpc::GenericStub& stub(const std::string& method);
  // Internal: a proxied call began / was freed. The destructor waits for every call to be
  // freed, so no call (or its upstream half, whose completion may come on a gRPC thread after
  // the client already has its status) outlives the proxy it points to.
  void call_began();
  void call_freed();

 private:
  class Service;
  FaultProxy() = default;

  std::shared_ptr<grpc::Channel> upstream_;
  std::unique_ptr<grpc::GenericStub> stub_;
  std::map<std::string, std::unique_ptr<grpc::GenericStub>> routes_;  // guarded by mu_
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  mutable std::mutex mu_;
  struct ActiveRule {
    FaultRule rule;
    int matched = 0;
    int applied = 0;
  };
  std::vector<ActiveRule> rules_;
  std::map<std::string, int> calls_;
  std::atomic<int> faults_{0};
  std::mutex calls_mu_;
  std::condition_variable calls_cv_;
  int live_calls_ = 0;  // guarded by calls_mu_
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_FAKES_FAULT_PROXY_H_
