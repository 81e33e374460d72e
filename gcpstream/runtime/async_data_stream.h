#ifndef GCPSTREAM_RUNTIME_ASYNC_DATA_STREAM_H_
#define GCPSTREAM_RUNTIME_ASYNC_DATA_STREAM_H_

#include <chrono>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "gcpstream/api/async_function.h"
#include "gcpstream/runtime/async_wait_operator.h"
#include "gcpstream/runtime/stream_execution_environment.h"

namespace gcpstream {

// Asynchronous I/O on a stream (Flink's AsyncDataStream): each record of `in` goes to an
// AsyncFunction that answers later, while the subtask keeps taking records, up to `capacity`
// at once.
//
//   struct Lookup : AsyncFunction<std::string, std::pair<std::string, int>> {
//     void async_invoke(const std::string& key, ResultFuture<...> result) override {...}
//   };
//   auto enriched = AsyncDataStream::unordered_wait(keys, Lookup{}, 10s, 64);
//
// `fn` is copied once per subtask (its copy constructor must be safe for that), then opened.
// `timeout` bounds one input from its first call to its outcome, over every retry and backoff
// (0: no timeout); when it elapses the function's timeout() decides the outcome (by default
// DEADLINE_EXCEEDED, failing the job). `capacity` (default 100, as Flink) is the number of
// inputs in flight per subtask; at the cap the operator back-pressures its input. In-flight
// inputs are checkpointed (see AsyncWaitOperator) and called again on restore.
struct AsyncDataStream {
  static constexpr int kDefaultCapacity = 100;

  // Results in completion order, never across a watermark.
  template <typename In, typename Fn, typename Out = typename Fn::output_type>
  static DataStream<Out> unordered_wait(DataStream<In> in, Fn fn, std::chrono::milliseconds timeout,
                                        int capacity = kDefaultCapacity,
                                        std::string name = "Async") {
    return add(std::move(in), std::move(fn),
               runtime::AsyncWaitConfig{runtime::AsyncOutputMode::kUnordered, timeout, capacity},
               AsyncRetryStrategy<Out>(), std::move(name));
  }
  // Results in input order.
  template <typename In, typename Fn, typename Out = typename Fn::output_type>
  static DataStream<Out> ordered_wait(DataStream<In> in, Fn fn, std::chrono::milliseconds timeout,
                                      int capacity = kDefaultCapacity, std::string name = "Async") {
    return add(std::move(in), std::move(fn),
               runtime::AsyncWaitConfig{runtime::AsyncOutputMode::kOrdered, timeout, capacity},
               AsyncRetryStrategy<Out>(), std::move(name));
  }
  // As above, calling the function again for an input its strategy accepts.
  template <typename In, typename Fn, typename Out = typename Fn::output_type>
  static DataStream<Out> unordered_wait_with_retry(DataStream<In> in, Fn fn,
                                                   std::chrono::milliseconds timeout, int capacity,
                                                   AsyncRetryStrategy<Out> retry,
                                                   std::string name = "Async") {
    return add(std::move(in), std::move(fn),
               runtime::AsyncWaitConfig{runtime::AsyncOutputMode::kUnordered, timeout, capacity},
               std::move(retry), std::move(name));
  }
  template <typename In, typename Fn, typename Out = typename Fn::output_type>
  static DataStream<Out> ordered_wait_with_retry(DataStream<In> in, Fn fn,
                                                 std::chrono::milliseconds timeout, int capacity,
                                                 AsyncRetryStrategy<Out> retry,
                                                 std::string name = "Async") {
    return add(std::move(in), std::move(fn),
               runtime::AsyncWaitConfig{runtime::AsyncOutputMode::kOrdered, timeout, capacity},
               std::move(retry), std::move(name));
  }

 private:
  template <typename In, typename Fn, typename Out>
  static DataStream<Out> add(DataStream<In> in, Fn fn, runtime::AsyncWaitConfig config,
                             AsyncRetryStrategy<Out> retry, std::string name) {
    static_assert(std::is_base_of_v<AsyncFunction<In, Out>, Fn>,
                  "the function must derive from AsyncFunction<In, Out> for the stream's type");
    static_assert(std::is_copy_constructible_v<Fn>, "each subtask gets a copy of the function");
    auto prototype = std::make_shared<const Fn>(std::move(fn));
    return in.template add<Out>(
        std::move(name),
        [prototype, config, retry](runtime::OutputBase* down, runtime::OperatorContext& ctx,
                                   runtime::JobServices& services) {
          runtime::AsyncWaitConfig c = config;
          c.checkpointing = services.config.checkpointing.interval.count() > 0;
          auto op = std::make_unique<runtime::AsyncWaitOperator<In, Out>>(
              std::make_unique<Fn>(*prototype), c, retry, static_cast<runtime::Output<Out>*>(down),
              ctx);
          runtime::OutputBase* input = static_cast<runtime::Output<In>*>(op.get());
          return runtime::InstantiatedOperator{std::move(op), input};
        });
  }
};

}  // namespace gcpstream

#endif  // GCPSTREAM_RUNTIME_ASYNC_DATA_STREAM_H_
