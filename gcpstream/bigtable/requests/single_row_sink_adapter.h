#ifndef GCPSTREAM_BIGTABLE_REQUESTS_SINGLE_ROW_SINK_ADAPTER_H_
#define GCPSTREAM_BIGTABLE_REQUESTS_SINGLE_ROW_SINK_ADAPTER_H_

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "gcpstream/api/sink.h"
#include "gcpstream/bigtable/requests/bigtable_request_async.h"
#include "gcpstream/connector/async_sink_writer.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/failure_handler.h"

namespace gcpstream::bigtable {

// What the conditional sink does with an answer whose selected branch had no mutation.
enum class EmptyBranchPolicy {
  kIgnore,  // either predicate outcome is fine
  kFail,    // fail the job (a dropping failure handler cannot override it)
};

// The checks a sink surface adds to an answer: Ok, or the status that fails the job.
inline absl::Status CheckAnswer(const ConditionalResult& r, EmptyBranchPolicy policy) {
  if (policy == EmptyBranchPolicy::kFail && !r.selected_branch_has_mutations) {
    return absl::FailedPreconditionError(fmt::format(
        "the conditional request for row '{}' on {} selected the {} branch, which has no "
        "mutation (EmptyBranchPolicy FAIL). A replay after a lost answer can select the other "
        "branch: an insert-if-absent that was applied now finds the row",
        RowKeyForMessages(r.row_key), r.table_name,
        r.predicate_matched ? "on_match" : "otherwise"));
  }
  return absl::OkStatus();
}
inline absl::Status CheckAnswer(const ReadModifyWriteResult&, EmptyBranchPolicy) {
  return absl::OkStatus();
}

struct SingleRowWriterConfig {
  BigtableRequestOptions options;
  std::string app_profile_id;
  EmptyBranchPolicy empty_branch_policy = EmptyBranchPolicy::kIgnore;
  std::shared_ptr<connector::FailureHandler> failure_handler;
  connector::ClientOptions client;
  std::shared_ptr<BigtableDataStub> stub;  // tests; null: a channel from `client`
};

// One table's requests as the writer core drives them: each element is one RPC, answered to
// the core's listener with its token; a failed element is handed back for routing.
template <typename Traits>
class SingleRowTableClient final : public connector::DestinationClient<typename Traits::Request> {
 public:
  using Request = typename Traits::Request;

  SingleRowTableClient(std::string table, std::shared_ptr<SingleRowClient> client,
                       EmptyBranchPolicy policy,
                       std::shared_ptr<connector::SinkOutcomeListener<Request>> listener)
      : state_(std::make_shared<State>()),
        table_(std::move(table)),
        client_(std::move(client)),
        policy_(policy),
        listener_(std::move(listener)) {}

  void submit(Request&& request, std::uint64_t token) override {
    auto kept = std::make_shared<Request>(std::move(request));
    {
      std::lock_guard lock(state_->mu);
      state_->cancels[token] = nullptr;
    }
    auto cancel = Traits::start(*client_, table_, *kept,
                                [state = state_, listener = listener_, kept, token,
                                 policy = policy_](absl::StatusOr<typename Traits::Result> answer) {
                                  connector::SinkOutcome<Request> outcome;
                                  outcome.token = token;
                                  outcome.status =
                                      answer.ok() ? CheckAnswer(*answer, policy) : answer.status();
                                  if (!outcome.status.ok()) outcome.element = std::move(*kept);
                                  std::vector<connector::SinkOutcome<Request>> outcomes;
                                  outcomes.push_back(std::move(outcome));
                                  listener->on_outcomes(std::move(outcomes), nullptr);
                                  {
                                    std::lock_guard lock(state->mu);
                                    state->cancels.erase(token);
                                  }
                                  state->cv.notify_all();
                                });
    std::lock_guard lock(state_->mu);
    auto it = state_->cancels.find(token);
    if (it != state_->cancels.end()) it->second = std::move(cancel);
  }
  void submit_solo(Request&& request, std::uint64_t token) override {
    submit(std::move(request), token);
  }
  void flush() override {}  // nothing is batched
  absl::Status shutdown() override {
    std::vector<SingleRowClient::Cancel> cancels;
    {
      std::lock_guard lock(state_->mu);
      for (auto& [token, cancel] : state_->cancels) {
        if (cancel) cancels.push_back(cancel);
      }
    }
    for (auto& cancel : cancels) cancel(/*for_operator_timeout=*/false);
    std::unique_lock lock(state_->mu);
    state_->cv.wait(lock, [this] { return state_->cancels.empty(); });
    return absl::OkStatus();
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::map<std::uint64_t, SingleRowClient::Cancel> cancels;  // by token; empty until started
  };
  std::shared_ptr<State> state_;
  std::string table_;
  std::shared_ptr<SingleRowClient> client_;
  EmptyBranchPolicy policy_;
  std::shared_ptr<connector::SinkOutcomeListener<Request>> listener_;
};

// The single-row sinks' adapter on the shared writer core: one request per element (so an
// INVALID_ARGUMENT concerns that record alone), no retries (the RPCs are not idempotent: a
// failure that ended a call before its answer is ambiguous and fails the job), the table never
// created (NOT_FOUND fails the job naming it).
template <typename Traits>
class SingleRowSinkAdapter final
    : public connector::AsyncSinkAdapter<connector::TableDestination, typename Traits::Request> {
 public:
  using Request = typename Traits::Request;

  SingleRowSinkAdapter(SingleRowWriterConfig config, std::shared_ptr<SingleRowClient> client)
      : config_(std::move(config)), client_(std::move(client)) {
    rules_.single_row_request = true;
  }

  std::string describe(const connector::TableDestination& t) const override {
    return t.resource_name();
  }
  std::string metric_scope(const connector::TableDestination& t) const override { return t.table; }
  // One channel serves every table and instance.
  std::string group_of(const connector::TableDestination&) const override { return "bigtable"; }

  absl::StatusOr<std::shared_ptr<connector::DestinationClient<Request>>> open(
      const connector::TableDestination& t,
      std::shared_ptr<connector::SinkOutcomeListener<Request>> listener) override {
    return std::shared_ptr<connector::DestinationClient<Request>>(
        std::make_shared<SingleRowTableClient<Traits>>(
            t.resource_name(), client_, config_.empty_branch_policy, std::move(listener)));
  }

  std::int64_t size_of(const Request& r) const override { return r.byte_size(); }
  // The request's documented limits, checked before any RPC: a record failure.
  absl::Status precheck(const connector::TableDestination&, const Request& r) override {
    return r.validate();
  }
  connector::FailureClass classify(const absl::Status& status) const override {
    return connector::Classify(status, rules_);
  }
  connector::RepairResult repair(const connector::TableDestination& t,
                                 const std::vector<const Request*>&) override {
    return {absl::FailedPreconditionError(fmt::format(
                "the single-row request sinks never create tables ({})", t.resource_name())),
            true};
  }
  absl::Status fatal_failure(const connector::TableDestination& t,
                             const absl::Status& cause) const override {
    if (cause.code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(fmt::format(
          "Bigtable {} on {} answered NOT_FOUND: {}. The single-row request sinks never create "
          "tables or column families",
          Traits::kRpc, t.resource_name(), cause.message()));
    }
    return cause;  // already names the RPC, table and row (SingleRowClient)
  }
  std::unique_ptr<connector::FailedElement> failed_element(const connector::TableDestination& t,
                                                           std::optional<Request> r,
                                                           absl::Status status,
                                                           bool service_rejection) const override {
    std::string payload;
    if (r) payload = r->to_proto(t.resource_name(), config_.app_profile_id).SerializeAsString();
    return std::make_unique<connector::BasicFailedElement>(
        "bigtable", t.resource_name(), std::move(payload), std::move(status), service_rejection);
  }

 private:
  SingleRowWriterConfig config_;
  std::shared_ptr<SingleRowClient> client_;
  connector::ClassifierRules rules_;
};

template <typename Traits>
using SingleRowWriterCore =
    connector::AsyncSinkWriter<connector::TableDestination, typename Traits::Request>;

// The writer core of a single-row sink (its words, caps and adapter).
template <typename Traits>
absl::StatusOr<std::unique_ptr<SingleRowWriterCore<Traits>>> MakeSingleRowWriterCore(
    SingleRowWriterConfig config, WriterInitContext& context) {
  GCP_ASSIGN_OR_RETURN(
      std::shared_ptr<SingleRowClient> client,
      SingleRowClient::create(config.client, config.stub, config.app_profile_id, config.options,
                              &context.metric_group(), /*async_surface=*/false));
  connector::AsyncSinkWriterSettings s;
  s.words = {.connector = "Bigtable",
             .metric_connector = "bigtable",
             .element = "request",
             .elements = "requests",
             .element_metric = "Requests",
             .destination = "table",
             .client = "request client",
             .live_destinations = "tables",
             .request = Traits::kRpc};
  s.max_in_flight_count = config.options.max_in_flight_requests;
  s.progress.connector = "Bigtable";
  s.progress.completion = std::string(Traits::kRpc) + " answers";
  s.one_element_per_request = true;
  s.abandoned_counter = "bigtableRequestShutdownsAbandoned";
  std::shared_ptr<connector::FailureHandler> handler =
      config.failure_handler ? config.failure_handler : connector::FailureHandler::fail_job();
  auto adapter = std::make_unique<SingleRowSinkAdapter<Traits>>(std::move(config), client);
  return std::make_unique<SingleRowWriterCore<Traits>>(std::move(s), std::move(adapter),
                                                       std::move(handler), context);
}

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_REQUESTS_SINGLE_ROW_SINK_ADAPTER_H_
