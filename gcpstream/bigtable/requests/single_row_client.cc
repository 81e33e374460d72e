#include "gcpstream/bigtable/requests/single_row_client.h"

#include <fmt/format.h>

#include <utility>

#include "absl/cleanup/cleanup.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigtable/sink/bigtable_sink.h"
#include "gcpstream/connector/failure_router.h"

namespace gcpstream::bigtable {

namespace v2 = google::bigtable::v2;

absl::Status BigtableRequestOptions::validate() const {
  if (max_in_flight_requests < 1) {
    return absl::InvalidArgumentError(
        fmt::format("maxInFlightRequests must be at least 1 (got {})", max_in_flight_requests));
  }
  if (request_timeout.count() < 1) {
    return absl::InvalidArgumentError(
        fmt::format("requestTimeout must be positive (got {} ms)", request_timeout.count()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<SingleRowClient>> SingleRowClient::create(
    const connector::ClientOptions& client, std::shared_ptr<BigtableDataStub> stub,
    std::string app_profile_id, BigtableRequestOptions options, MetricGroup* metrics,
    bool async_surface) {
  GCP_RETURN_IF_ERROR(options.validate());
  if (!stub) {
    GCP_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                         connector::CreateChannel(client, kBigtableTarget));
    stub = MakeGrpcBigtableDataStub(std::move(channel));
  }
  return std::shared_ptr<SingleRowClient>(new SingleRowClient(
      std::move(stub), std::move(app_profile_id), options, metrics, async_surface));
}

SingleRowClient::SingleRowClient(std::shared_ptr<BigtableDataStub> stub, std::string app_profile_id,
                                 BigtableRequestOptions options, MetricGroup* metrics,
                                 bool async_surface)
    : stub_(std::move(stub)),
      app_profile_id_(std::move(app_profile_id)),
      options_(options),
      accepted_(metrics->counter("requestsAccepted")),
      completed_(metrics->counter("requestsCompleted")),
      matched_(metrics->counter("predicatesMatched")),
      not_matched_(metrics->counter("predicatesNotMatched")),
      empty_branches_(metrics->counter("emptyBranchesSelected")),
      failed_(metrics->counter("requestsFailed")),
      timed_out_(metrics->counter("requestsTimedOut")),
      skipped_(metrics->counter("recordsSkipped")),
      in_flight_(std::make_shared<std::atomic<std::int64_t>>(0)) {
  if (!async_surface) return;
  auto in_flight = in_flight_;
  metrics->gauge("inFlightRequests",
                 [in_flight] { return static_cast<double>(in_flight->load()); });
  // Registered now, on the subtask thread: answers arrive on gRPC threads.
  for (int code = 1; code < static_cast<int>(error_class_.size()); ++code) {
    error_class_[static_cast<std::size_t>(code)] =
        &metrics->add_group("errorClass")
             .add_group(connector::ErrorClassName(static_cast<absl::StatusCode>(code)))
             .counter("errors");
  }
}

std::uint64_t SingleRowClient::begin_call() {
  std::lock_guard lock(mu_);
  const std::uint64_t id = next_call_++;
  calls_.emplace(id, Call{});
  in_flight_->fetch_add(1);
  return id;
}

SingleRowClient::Cancel SingleRowClient::started(std::uint64_t id, std::function<void()> cancel) {
  {
    std::lock_guard lock(mu_);
    auto it = calls_.find(id);
    if (it != calls_.end()) it->second.cancel = std::move(cancel);  // else: it already answered
  }
  std::weak_ptr<SingleRowClient> weak = weak_from_this();
  return [weak, id](bool for_operator_timeout) {
    auto self = weak.lock();
    if (!self) return;
    std::function<void()> cancel;
    {
      std::lock_guard lock(self->mu_);
      auto it = self->calls_.find(id);
      if (it == self->calls_.end() || !it->second.cancel) return;
      it->second.operator_timeout = it->second.operator_timeout || for_operator_timeout;
      cancel = it->second.cancel;
    }
    cancel();
  };
}

bool SingleRowClient::ended_by_operator_timeout(std::uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = calls_.find(id);
  return it != calls_.end() && it->second.operator_timeout;
}

void SingleRowClient::count(Counter& counter) {
  if (metrics_live_.load(std::memory_order_acquire)) counter.inc();
}

void SingleRowClient::end_call(std::uint64_t id) {
  {
    std::lock_guard lock(mu_);
    calls_.erase(id);
    in_flight_->fetch_sub(1);
  }
  cv_.notify_all();
}

bool SingleRowClient::shutdown(std::chrono::milliseconds timeout) {
  std::vector<std::function<void()>> cancels;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, call] : calls_) {
      if (call.cancel) cancels.push_back(call.cancel);
    }
  }
  for (auto& cancel : cancels) cancel();
  std::unique_lock lock(mu_);
  if (cv_.wait_for(lock, timeout, [this] { return calls_.empty(); })) return true;
  // Answers still to come must not touch metrics that may be gone by then.
  metrics_live_.store(false, std::memory_order_release);
  return false;
}

absl::Status SingleRowClient::failed(std::uint64_t id, const absl::Status& status,
                                     const std::string& rpc, const std::string& table_name,
                                     const std::string& row_key) {
  count(failed_);
  const absl::StatusCode code = status.code();
  if (ended_by_operator_timeout(id)) {
    // Cancelled by the async operator's timeout: a timeout, not a CANCELLED answer.
    count(timed_out_);
  } else {
    if (code == absl::StatusCode::kDeadlineExceeded) count(timed_out_);
    const auto index = static_cast<std::size_t>(code);
    if (index < error_class_.size() && error_class_[index] != nullptr) count(*error_class_[index]);
  }
  std::string hint;
  if (code == absl::StatusCode::kDeadlineExceeded || code == absl::StatusCode::kCancelled ||
      code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kUnknown ||
      code == absl::StatusCode::kInternal) {
    hint = fmt::format(
        " (requestTimeout {} ms; the outcome is ambiguous: the request may have been applied, "
        "and it is not retried)",
        options_.request_timeout.count());
  } else if (code == absl::StatusCode::kFailedPrecondition ||
             code == absl::StatusCode::kInvalidArgument) {
    hint =
        " (single-row requests need an app profile with single-cluster routing and "
        "single-row transactions allowed)";
  }
  return absl::Status(code,
                      fmt::format("Bigtable {} on {} for row '{}' failed: {}{}", rpc, table_name,
                                  RowKeyForMessages(row_key), status.message(), hint));
}

SingleRowClient::Cancel SingleRowClient::start_conditional(
    const std::string& table_name, const ConditionalRequest& request,
    std::function<void(absl::StatusOr<ConditionalResult>)> done) {
  auto proto = std::make_shared<const v2::CheckAndMutateRowRequest>(
      request.to_proto(table_name, app_profile_id_));
  const bool true_empty = request.on_match().mutation_count() == 0;
  const bool false_empty = request.otherwise().mutation_count() == 0;
  count(accepted_);
  const std::uint64_t id = begin_call();
  auto cancel = stub_->async_check_and_mutate_row(
      proto, options_.request_timeout,
      [self = shared_from_this(), this, id, table_name, row_key = request.row_key(), true_empty,
       false_empty,
       done = std::move(done)](absl::StatusOr<v2::CheckAndMutateRowResponse> response) {
        // Last: shutdown() waits for it, so nothing below runs after the client shut down.
        absl::Cleanup end = [this, id] { end_call(id); };
        if (!response.ok()) {
          return done(failed(id, response.status(), "CheckAndMutateRow", table_name, row_key));
        }
        count(completed_);
        ConditionalResult result;
        result.table_name = table_name;
        result.row_key = row_key;
        result.predicate_matched = response->predicate_matched();
        count(result.predicate_matched ? matched_ : not_matched_);
        result.selected_branch_has_mutations =
            result.predicate_matched ? !true_empty : !false_empty;
        if (!result.selected_branch_has_mutations) count(empty_branches_);
        done(std::move(result));
      });
  return started(id, std::move(cancel));
}

SingleRowClient::Cancel SingleRowClient::start_read_modify_write(
    const std::string& table_name, const ReadModifyWriteRequest& request,
    std::function<void(absl::StatusOr<ReadModifyWriteResult>)> done) {
  auto proto = std::make_shared<const v2::ReadModifyWriteRowRequest>(
      request.to_proto(table_name, app_profile_id_));
  count(accepted_);
  const std::uint64_t id = begin_call();
  auto cancel = stub_->async_read_modify_write_row(
      proto, options_.request_timeout,
      [self = shared_from_this(), this, id, table_name, row_key = request.row_key(),
       done = std::move(done)](absl::StatusOr<v2::ReadModifyWriteRowResponse> response) {
        absl::Cleanup end = [this, id] { end_call(id); };
        if (!response.ok()) {
          return done(failed(id, response.status(), "ReadModifyWriteRow", table_name, row_key));
        }
        count(completed_);
        done(ReadModifyWriteResult{table_name, BigtableRow::from_proto(response->row())});
      });
  return started(id, std::move(cancel));
}

}  // namespace gcpstream::bigtable
