#ifndef GCPSTREAM_TESTS_FAKES_SPANNER_STANDIN_H_
#define GCPSTREAM_TESTS_FAKES_SPANNER_STANDIN_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/spanner/v1/spanner.grpc.pb.h"
#include "tests/fakes/fault_proxy.h"

namespace gcpstream::testing {

// A Spanner endpoint with BatchWrite, in front of the Spanner emulator, which answers
// BatchWrite with UNIMPLEMENTED (1.5.28, measured; see ../shared/notes/emulators.md).
//
// Every method except BatchWrite is forwarded to the emulator unchanged, as raw bytes, through
// a FaultProxy. BatchWrite goes to a small server of our own that follows the BatchWrite
// reference (google.spanner.v1.Spanner.BatchWrite, "Batches the supplied mutation groups in a
// collection of efficient transactions … each group is applied atomically"; the response
// stream reports each group's status and commit timestamp by index, and groups are not
// replay-protected):
//   - it commits each mutation group as its own single-use read-write transaction on the
//     emulator and streams one BatchWriteResponse per group ({indexes: [i], status,
//     commit_timestamp}) in request order; a group the emulator refuses reports the emulator's
//     status and the next group still runs;
//   - the session must exist (checked with GetSession first): a missing session fails the whole
//     request with the emulator's NOT_FOUND, as the service does;
//   - it refuses, as a request-level failure, what the service refuses and the emulator never
//     sees: a request over 104,857,600 bytes (RESOURCE_EXHAUSTED, the size the service was
//     measured to refuse) and one holding more than 80,000 mutation cells (INVALID_ARGUMENT,
//     Spanner quotas, "mutations per mutation group"; a written column counts one cell here,
//     without secondary-index entries, so the stand-in refuses no more than the service would),
//     an empty request and an empty group (INVALID_ARGUMENT);
//   - the emulator allows one read-write transaction at a time and answers a concurrent one
//     ABORTED, so the stand-in's commits take turns, and one still ABORTED (by a client
//     committing around the stand-in) is retried by the stand-in (an emulator artefact, not
//     service behaviour), up to 50 times.
// Faults: a hook decides a group's status instead of committing it, and the FaultProxy's rules
// act on any method's stream (kCutStream after K responses, kStallStream, kReturnStatus,
// kForwardThenFail …) — for BatchWrite the response messages are the per-group results.
//
// Thread-safe.
class SpannerStandIn {
 public:
  // Listens on 127.0.0.1:`port` (0: any free port) in front of the emulator at `emulator`.
  static absl::StatusOr<std::unique_ptr<SpannerStandIn>> start(const std::string& emulator,
                                                               int port = 0);
  ~SpannerStandIn();

  // host:port clients connect to (the proxy).
  std::string endpoint() const { return proxy_->endpoint(); }
  FaultProxy& proxy() { return *proxy_; }

  // Called for each group, with its index in the request, before it is committed. A status
  // returned is reported for the group and the group is not applied; nullopt commits it.
  using GroupHook = std::function<std::optional<absl::Status>(
      const google::spanner::v1::BatchWriteRequest::MutationGroup& group, int index)>;
  void set_group_hook(GroupHook hook);

  // Off: every group answers OK with the current time as its commit timestamp and nothing is
  // committed: for measuring a client's own cost without the emulator's (bench/spanner_write).
  // On by default.
  void set_apply_groups(bool apply) { apply_groups_.store(apply); }

  int batch_write_calls() const { return batch_write_calls_.load(); }
  // Groups the emulator committed.
  int groups_applied() const { return groups_applied_.load(); }
  // Mutation groups seen, one count per group per request (a re-sent group counts again).
  int groups_received() const { return groups_received_.load(); }

  static constexpr std::size_t kMaxRequestBytes = 104857600;
  static constexpr std::size_t kMaxMutationCells = 80000;

  // Internal: the BatchWrite handler.
  grpc::Status batch_write(grpc::ServerContext* context,
                           const google::spanner::v1::BatchWriteRequest& request,
                           grpc::ServerWriter<google::spanner::v1::BatchWriteResponse>* writer);

 private:
  class Service;
  SpannerStandIn() = default;

  std::unique_ptr<google::spanner::v1::Spanner::Stub> emulator_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<FaultProxy> proxy_;
  std::mutex mu_;
  GroupHook hook_;  // guarded by mu_
  std::mutex commit_mu_;
  std::atomic<bool> apply_groups_{true};
  std::atomic<int> batch_write_calls_{0};
  std::atomic<int> groups_applied_{0};
  std::atomic<int> groups_received_{0};
};

// Cells a group costs as the stand-in counts them: columns × rows for a write, key entries
// (keys plus ranges, 1 for all rows) for a delete.
std::size_t StandInCells(const google::spanner::v1::BatchWriteRequest::MutationGroup& group);

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_FAKES_SPANNER_STANDIN_H_
