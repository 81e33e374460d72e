#ifndef GCPSTREAM_BIGTABLE_REQUESTS_BIGTABLE_REQUEST_ASYNC_H_
#define GCPSTREAM_BIGTABLE_REQUESTS_BIGTABLE_REQUEST_ASYNC_H_

#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/api/async_function.h"
#include "gcpstream/bigtable/requests/conditional_request.h"
#include "gcpstream/bigtable/requests/read_modify_write_request.h"
#include "gcpstream/bigtable/requests/single_row_client.h"
#include "gcpstream/connector/client_options_builder.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/runtime/async_data_stream.h"

namespace gcpstream::bigtable {

// What differs between the two single-row RPCs on the async surface.
struct ConditionalTraits {
  using Request = ConditionalRequest;
  using Result = ConditionalResult;
  static constexpr const char* kRpc = "CheckAndMutateRow";
  static SingleRowClient::Cancel start(SingleRowClient& client, const std::string& table,
                                       const Request& request,
                                       std::function<void(absl::StatusOr<Result>)> done) {
    return client.start_conditional(table, request, std::move(done));
  }
};
struct ReadModifyWriteTraits {
  using Request = ReadModifyWriteRequest;
  using Result = ReadModifyWriteResult;
  static constexpr const char* kRpc = "ReadModifyWriteRow";
  static SingleRowClient::Cancel start(SingleRowClient& client, const std::string& table,
                                       const Request& request,
                                       std::function<void(absl::StatusOr<Result>)> done) {
    return client.start_read_modify_write(table, request, std::move(done));
  }
};

// Single-row Bigtable requests as an async I/O step (the spec's BigtableConditionalAsync and
// BigtableReadModifyWriteAsync): each record becomes one request, and each answer becomes the
// record paired with its result.
//
//   auto conditional = BigtableConditionalAsync<Change>::builder()
//                          .table(TableDestination::of("p", "i", "users"))
//                          .app_profile_id("single-cluster")
//                          .serializer([](const Change& c) -> std::optional<ConditionalRequest>
//                          {...}) .build();
//   auto results = conditional->unordered_wait(changes, 30s);   // StatusOr<DataStream<...>>
//
// - The serializer returns the request, or nullopt to skip the record (no request, no output,
//   counted by recordsSkipped). A request that fails validation, or a destination resolver
//   error, fails the job: this surface has no failure handler.
// - Neither the client nor this runtime retries: request_timeout is one attempt's deadline, and
//   a deadline, a cancellation or an outage leaves the request ambiguous (it may have been
//   applied; a replayed increment or append applies again). A job that accepts that can retry
//   through AsyncDataStream's *_with_retry forms over make_function().
// - The operator timeout given to *_wait must exceed request_timeout, so that the request's own
//   deadline is what a slow request fails on; when the operator timeout fires first the
//   request is cancelled and the input fails naming both timeouts.
// - max_in_flight_requests is the operator's capacity. In-flight inputs are checkpointed
//   (T needs a ValueCodec, see AsyncWaitOperator) and re-sent after a restore: at-least-once.
// - orderedWait orders the results, not the RPCs: two requests for one row may run in either
//   order.
template <typename T, typename Traits>
class BigtableRequestAsync {
 public:
  using Request = typename Traits::Request;
  using Result = typename Traits::Result;
  using Output = std::pair<T, Result>;
  using Serializer = std::function<std::optional<Request>(const T&)>;
  using Resolver = std::function<absl::StatusOr<connector::TableDestination>(const T&)>;

  struct Config {
    std::optional<connector::TableDestination> table;
    Resolver resolver;
    Serializer serializer;
    std::string app_profile_id;
    BigtableRequestOptions options;
    connector::ClientOptions client;
    std::shared_ptr<BigtableDataStub> stub;  // tests
    std::chrono::milliseconds operator_timeout{0};
  };

  class Builder : public connector::ClientOptionsBuilder<Builder> {
   public:
    Builder& table(connector::TableDestination table) {
      config_.table = std::move(table);
      return *this;
    }
    // Resolves the table per record (instead of table()); an error fails the job.
    Builder& destination_resolver(Resolver resolver) {
      config_.resolver = std::move(resolver);
      return *this;
    }
    Builder& serializer(Serializer serializer) {
      config_.serializer = std::move(serializer);
      return *this;
    }
    // Must name a profile with single-cluster routing and single-row transactions allowed.
    Builder& app_profile_id(std::string id) {
      config_.app_profile_id = std::move(id);
      return *this;
    }
    Builder& request_options(BigtableRequestOptions options) {
      config_.options = options;
      return *this;
    }
    // Test seam: send through this stub instead of a channel.
    Builder& stub_for_testing(std::shared_ptr<BigtableDataStub> stub) {
      config_.stub = std::move(stub);
      return *this;
    }
    absl::StatusOr<BigtableRequestAsync> build() {
      if (absl::Status s = this->builder_error(); !s.ok()) return s;
      if (config_.table.has_value() == static_cast<bool>(config_.resolver)) {
        return absl::InvalidArgumentError(
            "set exactly one of table(...) and destination_resolver(...)");
      }
      if (!config_.serializer) return absl::InvalidArgumentError("serializer(...) is required");
      if (absl::Status s = config_.options.validate(); !s.ok()) return s;
      config_.client = this->client();
      return BigtableRequestAsync(config_);
    }

   private:
    Config config_;
  };

  static Builder builder() { return Builder(); }

  // The async function (one copy per subtask) behind the *_wait methods.
  class Function final : public AsyncFunction<T, Output> {
   public:
    explicit Function(std::shared_ptr<const Config> config) : config_(std::move(config)) {}
    Function(const Function& other) : config_(other.config_) {}  // a fresh subtask copy

    absl::Status open(const AsyncFunctionContext& context) override {
      operator_name_ = context.operator_name;
      GCP_ASSIGN_OR_RETURN(
          client_, SingleRowClient::create(config_->client, config_->stub, config_->app_profile_id,
                                           config_->options, context.metric_group));
      return absl::OkStatus();
    }
    absl::Status close() override {
      if (client_ && !client_->shutdown(std::chrono::seconds(10))) {
        return absl::DeadlineExceededError(
            fmt::format("'{}': Bigtable requests still in flight 10 s after they were cancelled",
                        operator_name_));
      }
      return absl::OkStatus();
    }

    void async_invoke(const T& input, ResultFuture<Output> result) override {
      std::string table;
      if (config_->table) {
        table = config_->table->resource_name();
      } else {
        absl::StatusOr<connector::TableDestination> resolved = config_->resolver(input);
        if (!resolved.ok()) {
          return result.complete_exceptionally(absl::Status(
              resolved.status().code(), fmt::format("'{}': the destination resolver failed: {}",
                                                    operator_name_, resolved.status().message())));
        }
        table = resolved->resource_name();
      }
      std::optional<Request> request = config_->serializer(input);
      if (!request) {
        client_->count_skipped();
        return result.complete({});
      }
      if (absl::Status valid = request->validate(); !valid.ok()) {
        return result.complete_exceptionally(absl::Status(
            valid.code(), fmt::format("'{}': the {} request for {} is invalid: {}", operator_name_,
                                      Traits::kRpc, table, valid.message())));
      }
      const T* key = &input;
      auto pending = pending_;
      std::uint64_t id;
      {
        std::lock_guard lock(pending->mu);
        id = pending->next_id++;
        pending->calls[key] = {id, nullptr};
      }
      auto cancel = Traits::start(
          *client_, table, *request,
          [pending, key, id, copy = input, result](absl::StatusOr<Result> answer) mutable {
            {
              // Only its own registration: the input's address may hold a newer input by now.
              std::lock_guard lock(pending->mu);
              auto it = pending->calls.find(key);
              if (it != pending->calls.end() && it->second.first == id) pending->calls.erase(it);
            }
            if (!answer.ok()) return result.complete_exceptionally(answer.status());
            std::vector<Output> out;
            out.emplace_back(std::move(copy), std::move(*answer));
            result.complete(std::move(out));
          });
      std::lock_guard lock(pending->mu);
      auto it = pending->calls.find(key);
      if (it != pending->calls.end() && it->second.first == id)
        it->second.second = std::move(cancel);
    }

    void timeout(const T& input, ResultFuture<Output> result) override {
      SingleRowClient::Cancel cancel;
      {
        std::lock_guard lock(pending_->mu);
        auto it = pending_->calls.find(&input);
        if (it != pending_->calls.end()) {
          cancel = std::move(it->second.second);
          pending_->calls.erase(it);
        }
      }
      if (!cancel) {
        return result.complete_exceptionally(absl::DeadlineExceededError(fmt::format(
            "'{}': the operator timeout ({} ms) elapsed with no {} request in flight for the "
            "input (between retry attempts, or answered as the timeout fired)",
            operator_name_, config_->operator_timeout.count(), Traits::kRpc)));
      }
      cancel(/*for_operator_timeout=*/true);
      result.complete_exceptionally(absl::DeadlineExceededError(fmt::format(
          "'{}': the operator timeout ({} ms) elapsed before Bigtable answered the {} request "
          "(requestTimeout {} ms); it was cancelled, and whether it was applied is unknown",
          operator_name_, config_->operator_timeout.count(), Traits::kRpc,
          config_->options.request_timeout.count())));
    }

   private:
    struct Pending {
      std::mutex mu;
      std::uint64_t next_id = 0;
      // By input: the call's id and its cancel function (empty until the call started).
      std::map<const T*, std::pair<std::uint64_t, SingleRowClient::Cancel>> calls;
    };
    std::shared_ptr<const Config> config_;
    std::shared_ptr<SingleRowClient> client_;
    std::shared_ptr<Pending> pending_ = std::make_shared<Pending>();
    std::string operator_name_;
  };

  absl::StatusOr<DataStream<Output>> unordered_wait(DataStream<T> in,
                                                    std::chrono::milliseconds timeout,
                                                    std::string name = default_name()) const {
    GCP_ASSIGN_OR_RETURN(Function fn, make_function(timeout));
    return AsyncDataStream::unordered_wait(std::move(in), std::move(fn), timeout,
                                           config_->options.max_in_flight_requests,
                                           std::move(name));
  }
  absl::StatusOr<DataStream<Output>> ordered_wait(DataStream<T> in,
                                                  std::chrono::milliseconds timeout,
                                                  std::string name = default_name()) const {
    GCP_ASSIGN_OR_RETURN(Function fn, make_function(timeout));
    return AsyncDataStream::ordered_wait(std::move(in), std::move(fn), timeout,
                                         config_->options.max_in_flight_requests, std::move(name));
  }

  // The async function itself, for AsyncDataStream's retrying forms (the job's own decision to
  // replay a request that may have been applied). `operator_timeout` is the one handed to
  // AsyncDataStream; it must exceed request_timeout.
  absl::StatusOr<Function> make_function(std::chrono::milliseconds operator_timeout) const {
    if (operator_timeout <= config_->options.request_timeout) {
      return absl::InvalidArgumentError(fmt::format(
          "the async operator timeout ({} ms) must exceed requestTimeout ({} ms), so that a "
          "slow request fails on its own deadline",
          operator_timeout.count(), config_->options.request_timeout.count()));
    }
    auto config = std::make_shared<Config>(*config_);
    config->operator_timeout = operator_timeout;
    return Function(std::move(config));
  }

 private:
  explicit BigtableRequestAsync(Config config)
      : config_(std::make_shared<const Config>(std::move(config))) {}
  static std::string default_name() { return fmt::format("Bigtable {}", Traits::kRpc); }
  std::shared_ptr<const Config> config_;
};

template <typename T>
using BigtableConditionalAsync = BigtableRequestAsync<T, ConditionalTraits>;
template <typename T>
using BigtableReadModifyWriteAsync = BigtableRequestAsync<T, ReadModifyWriteTraits>;

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_REQUESTS_BIGTABLE_REQUEST_ASYNC_H_
