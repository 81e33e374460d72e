#ifndef GCPSTREAM_BIGTABLE_REQUESTS_SINGLE_ROW_CLIENT_H_
#define GCPSTREAM_BIGTABLE_REQUESTS_SINGLE_ROW_CLIENT_H_

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/api/metrics.h"
#include "gcpstream/bigtable/client/bigtable_stub.h"
#include "gcpstream/bigtable/requests/conditional_request.h"
#include "gcpstream/bigtable/requests/read_modify_write_request.h"
#include "gcpstream/connector/client_options.h"

namespace gcpstream::bigtable {

// The knobs of the single-row request surfaces (the spec's BigtableRequestOptions).
struct BigtableRequestOptions {
  // Requests in flight per subtask. On the async surface this is the operator's capacity.
  int max_in_flight_requests = 100;
  // One attempt's whole deadline. Neither RPC is retried by the client (see docs/bigtable.md).
  std::chrono::milliseconds request_timeout{std::chrono::seconds(20)};
  // INVALID_ARGUMENT naming the option for a value out of range.
  absl::Status validate() const;
};

// The runtime behind the single-row surfaces: one stub (one channel serves every instance and
// table: the table is named per request), the spec's single-row request metrics, and the
// classification of answers. One per subtask; start_* are thread-safe; `done` runs on a gRPC
// thread.
class SingleRowClient : public std::enable_shared_from_this<SingleRowClient> {
 public:
  // `stub` null: a channel from `client` (emulator endpoint or credentials).
  // `async_surface`: the client also keeps the inFlightRequests gauge and the
  // errorClass.<CODE>.errors counters (on the sink surface the writer core keeps both).
  static absl::StatusOr<std::shared_ptr<SingleRowClient>> create(
      const connector::ClientOptions& client, std::shared_ptr<BigtableDataStub> stub,
      std::string app_profile_id, BigtableRequestOptions options, MetricGroup* metrics,
      bool async_surface = true);

  // Sends `request` (already validated) to `table_name`. The result or the failure: the
  // service's status with its code kept and a message naming the table, the row and, for a
  // deadline, requestTimeout and the ambiguity (the request may have been applied).
  // Cancels the call (best effort; harmless once it ended). `for_operator_timeout`: the async
  // operator's timeout ended it, so it counts as timed out rather than as a CANCELLED answer.
  using Cancel = std::function<void(bool for_operator_timeout)>;
  Cancel start_conditional(const std::string& table_name, const ConditionalRequest& request,
                           std::function<void(absl::StatusOr<ConditionalResult>)> done);
  Cancel start_read_modify_write(const std::string& table_name,
                                 const ReadModifyWriteRequest& request,
                                 std::function<void(absl::StatusOr<ReadModifyWriteResult>)> done);

  // A record whose request step returned nothing: neither sent nor failed.
  void count_skipped() { count(skipped_); }
  const BigtableRequestOptions& options() const { return options_; }
  // Cancels every request in flight and waits (up to `timeout`) for their answers, so that no
  // gRPC thread touches this client or its metrics afterwards. False at the timeout.
  bool shutdown(std::chrono::milliseconds timeout);

 private:
  SingleRowClient(std::shared_ptr<BigtableDataStub> stub, std::string app_profile_id,
                  BigtableRequestOptions options, MetricGroup* metrics, bool async_surface);
  absl::Status failed(std::uint64_t id, const absl::Status& status, const std::string& rpc,
                      const std::string& table_name, const std::string& row_key);
  bool ended_by_operator_timeout(std::uint64_t id);
  void count(Counter& counter);
  // Bookkeeping of the calls in flight: a call is registered before it starts and removed by
  // its answer; the returned function cancels it while it is in flight.
  std::uint64_t begin_call();
  Cancel started(std::uint64_t id, std::function<void()> cancel);
  void end_call(std::uint64_t id);

  std::shared_ptr<BigtableDataStub> stub_;
  std::string app_profile_id_;
  BigtableRequestOptions options_;
  Counter& accepted_;
  Counter& completed_;
  Counter& matched_;
  Counter& not_matched_;
  Counter& empty_branches_;
  Counter& failed_;
  Counter& timed_out_;
  Counter& skipped_;
  std::shared_ptr<std::atomic<std::int64_t>> in_flight_;
  // errorClass.<CODE>.errors by code (async surface only; null otherwise).
  std::array<Counter*, 17> error_class_{};
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t next_call_ = 0;
  struct Call {
    std::function<void()> cancel;   // empty until the call started
    bool operator_timeout = false;  // cancelled by the async operator's timeout
  };
  std::map<std::uint64_t, Call> calls_;
  // False once shutdown() gave up waiting: late answers then count nothing.
  std::atomic<bool> metrics_live_{true};
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_REQUESTS_SINGLE_ROW_CLIENT_H_
