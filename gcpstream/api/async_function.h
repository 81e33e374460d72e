#ifndef GCPSTREAM_API_ASYNC_FUNCTION_H_
#define GCPSTREAM_API_ASYNC_FUNCTION_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/api/metrics.h"

namespace gcpstream {

namespace internal {

// Where a ResultFuture delivers its one outcome. Implemented by the async wait operator: it
// posts the outcome to its subtask's mailbox, so deliver() may run on any thread.
template <typename Out>
class AsyncResultSink {
 public:
  virtual ~AsyncResultSink() = default;
  virtual void deliver(std::uint64_t entry, int attempt,
                       absl::StatusOr<std::vector<Out>> outcome) = 0;
};

}  // namespace internal

// The handle an AsyncFunction completes, once, with the results for one input (Flink's
// ResultFuture). Cheap to copy: copies share the one outcome.
//
// Thread-safety: complete() and complete_exceptionally() may be called from any thread (a gRPC
// completion queue, a callback pool) or synchronously inside async_invoke(); the outcome is
// handed to the subtask thread as a mail. Only the first call counts; later ones are ignored.
// Calling either after the job ended is harmless (the outcome is dropped).
template <typename Out>
class ResultFuture {
 public:
  ResultFuture(std::weak_ptr<internal::AsyncResultSink<Out>> sink, std::uint64_t entry, int attempt)
      : state_(std::make_shared<State>(std::move(sink), entry, attempt)) {}

  // Zero or more results; each becomes one record downstream with the input's timestamp.
  void complete(std::vector<Out> results) { finish(std::move(results)); }
  // Fails the input. The error's code is kept; by default the job fails with it (a retry
  // strategy given to the *_with_retry forms may try the input again instead).
  void complete_exceptionally(absl::Status error) {
    if (error.ok()) error = absl::InternalError("complete_exceptionally() called with OK");
    finish(std::move(error));
  }
  // Whether complete() or complete_exceptionally() was already called on this attempt.
  bool done() const { return state_->done.load(std::memory_order_acquire); }
  // 0 for the first call of async_invoke() for an input, then 1, 2, ... for retries.
  int attempt() const { return state_->attempt; }

 private:
  struct State {
    State(std::weak_ptr<internal::AsyncResultSink<Out>> s, std::uint64_t e, int a)
        : sink(std::move(s)), entry(e), attempt(a) {}
    std::weak_ptr<internal::AsyncResultSink<Out>> sink;
    std::uint64_t entry;
    int attempt;
    std::atomic<bool> done{false};
  };
  void finish(absl::StatusOr<std::vector<Out>> outcome) {
    if (state_->done.exchange(true, std::memory_order_acq_rel)) return;
    if (auto sink = state_->sink.lock()) {
      sink->deliver(state_->entry, state_->attempt, std::move(outcome));
    }
  }
  std::shared_ptr<State> state_;
};

// What an AsyncFunction sees of its subtask in open().
struct AsyncFunctionContext {
  std::string operator_name;
  int subtask_index = 0;
  int parallelism = 1;
  int attempt_number = 0;  // the job attempt (restarts count up)
  MetricGroup* metric_group = nullptr;
};

// A function that answers each input asynchronously (Flink's AsyncFunction /
// RichAsyncFunction), run by AsyncDataStream::ordered_wait / unordered_wait.
//
// Each subtask gets its own copy of the function (the copy constructor runs once per subtask
// and attempt), then open() once before the first input and close() once at the end, all on
// the subtask thread. async_invoke() runs on the subtask thread too and must not block: it
// starts the work and returns; whatever thread finishes the work completes `result`.
template <typename In, typename Out>
class AsyncFunction {
 public:
  using input_type = In;
  using output_type = Out;

  virtual ~AsyncFunction() = default;
  virtual absl::Status open(const AsyncFunctionContext& context) {
    (void)context;
    return absl::OkStatus();
  }
  virtual absl::Status close() { return absl::OkStatus(); }

  // Starts the asynchronous work for `input` and returns. `input` stays valid until `result`
  // was completed (the operator keeps it for retries and checkpoints), but copy what the work
  // needs: the work may outlive a failed attempt. Exceptions thrown here fail the subtask.
  virtual void async_invoke(const In& input, ResultFuture<Out> result) = 0;

  // Called on the subtask thread when the operator timeout of `input` elapsed before its
  // result arrived. The default completes it exceptionally with DEADLINE_EXCEEDED, which fails
  // the job; override to complete with a fallback (e.g. an empty result). An answer to the
  // attempt in flight that arrives after this call is dropped: this call decides the outcome.
  virtual void timeout(const In& input, ResultFuture<Out> result) {
    (void)input;
    result.complete_exceptionally(
        absl::DeadlineExceededError("the async function did not complete the input within the "
                                    "operator timeout"));
  }
};

// When the *_with_retry forms of AsyncDataStream call async_invoke() again for an input
// (Flink's AsyncRetryStrategy / AsyncRetryStrategies). Value type; copyable.
//
// An input is retried when its attempt failed with an error `if_error` accepts, or completed
// with results `if_result` accepts (e.g. an empty result), as long as fewer than
// `max_retries` retries were made and the operator timeout has not elapsed (the timeout spans
// every attempt and every backoff of one input). Without a predicate nothing is retried on
// that side. Each retry is a new call: for a non-idempotent request (an increment) a retry
// after an ambiguous failure may apply it twice — accepting that is the job's decision.
template <typename Out>
class AsyncRetryStrategy {
 public:
  using ErrorPredicate = std::function<bool(const absl::Status&)>;
  using ResultPredicate = std::function<bool(const std::vector<Out>&)>;

  // No retries (what ordered_wait / unordered_wait use).
  AsyncRetryStrategy() = default;

  // `max_retries` retries after the first attempt, each `delay` after the previous failure.
  static AsyncRetryStrategy fixed_delay(int max_retries, std::chrono::milliseconds delay) {
    return exponential_backoff(max_retries, delay, delay, 1.0);
  }
  // Delays initial, initial*multiplier, ... capped at max_delay.
  static AsyncRetryStrategy exponential_backoff(int max_retries,
                                                std::chrono::milliseconds initial_delay,
                                                std::chrono::milliseconds max_delay,
                                                double multiplier) {
    AsyncRetryStrategy s;
    s.max_retries_ = std::max(0, max_retries);
    s.initial_delay_ = std::max(std::chrono::milliseconds(0), initial_delay);
    s.max_delay_ = std::max(s.initial_delay_, max_delay);
    s.multiplier_ = std::max(1.0, multiplier);
    return s;
  }
  AsyncRetryStrategy& if_error(ErrorPredicate predicate) {
    if_error_ = std::move(predicate);
    return *this;
  }
  AsyncRetryStrategy& if_result(ResultPredicate predicate) {
    if_result_ = std::move(predicate);
    return *this;
  }

  // Predicates of Flink's RetryPredicates: any error; an empty result.
  static bool AnyError(const absl::Status& s) { return !s.ok(); }
  static bool EmptyResult(const std::vector<Out>& results) { return results.empty(); }

  int max_retries() const { return max_retries_; }
  // Whether the attempt that just ended (0-based) may be followed by another one.
  bool can_retry(int attempt) const { return attempt < max_retries_; }
  bool retries_error(const absl::Status& s) const { return if_error_ && if_error_(s); }
  bool retries_result(const std::vector<Out>& r) const { return if_result_ && if_result_(r); }
  // The wait before retry number `retry` (1-based).
  std::chrono::milliseconds backoff(int retry) const {
    double delay = static_cast<double>(initial_delay_.count());
    for (int i = 1; i < retry && delay < static_cast<double>(max_delay_.count()); ++i) {
      delay *= multiplier_;
    }
    return std::min(max_delay_, std::chrono::milliseconds(static_cast<std::int64_t>(delay)));
  }

 private:
  int max_retries_ = 0;
  std::chrono::milliseconds initial_delay_{0};
  std::chrono::milliseconds max_delay_{0};
  double multiplier_ = 1.0;
  ErrorPredicate if_error_;
  ResultPredicate if_result_;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_ASYNC_FUNCTION_H_
