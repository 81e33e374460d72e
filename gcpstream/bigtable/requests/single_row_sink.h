#ifndef GCPSTREAM_BIGTABLE_REQUESTS_SINGLE_ROW_SINK_H_
#define GCPSTREAM_BIGTABLE_REQUESTS_SINGLE_ROW_SINK_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "gcpstream/api/lineage.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigtable/requests/single_row_sink_adapter.h"
#include "gcpstream/connector/async_sink_writer_front.h"
#include "gcpstream/connector/client_options_builder.h"
#include "gcpstream/connector/lineage.h"
#include "gcpstream/connector/serialization.h"

namespace gcpstream::bigtable {

// Single-row requests as a sink (the spec's BigtableConditionalSink and
// BigtableReadModifyWriteSink): one CheckAndMutateRow / ReadModifyWriteRow per record, the
// answers discarded, on the shared writer core.
//
//   auto sink = BigtableConditionalSink<Change>::builder()
//                   .table(TableDestination::of("p", "i", "users"))
//                   .app_profile_id("single-cluster")
//                   .serializer([](const Change& c) -> std::optional<ConditionalRequest> {...})
//                   .build();
//   changes.sink_to(*sink);
//
// - At-least-once: flush() at each checkpoint barrier waits for every answer, so a completed
//   checkpoint means each record before the barrier was answered. A replay after a failure
//   sends the request again: an increment or append replayed applies again (the checkpoint
//   completion does not deduplicate).
// - Bounded: at most request_options().max_in_flight_requests (default 100) unanswered
//   requests per subtask; at the cap write() yields to the mailbox.
// - Failures: the serializer returning nullopt skips the record (recordsSkipped); a serializer
//   exception, a request that fails validation, or INVALID_ARGUMENT from the service is a
//   record failure for the failure handler (default: fail the job). Everything else fails the
//   job, the request is never retried: a deadline, cancellation, UNAVAILABLE or ABORTED is
//   ambiguous (it may have been applied); NOT_FOUND (the sink never creates tables);
//   PERMISSION_DENIED; FAILED_PRECONDITION (e.g. a profile without single-row transactions).
// - The conditional sink's empty_branch_policy(kFail) fails the job when the selected branch
//   had no mutation, whatever the failure handler.
// - Metrics: numRecordsSend, numRecordsSendErrors, recordsSkipped, errorClass.<CODE>.errors,
//   inFlightRequests and the spec's requestsAccepted, requestsCompleted, predicatesMatched,
//   predicatesNotMatched, emptyBranchesSelected, requestsFailed, requestsTimedOut.
template <typename T, typename Traits>
class SingleRowSink final : public Sink<T>, public LineageVertexProvider {
 public:
  using Request = typename Traits::Request;
  using Serializer = std::function<std::optional<Request>(const T&)>;

  class Builder : public connector::ClientOptionsBuilder<Builder> {
   public:
    Builder& table(connector::TableDestination table) {
      fixed_ = table;
      resolver_ = connector::FixedDestination<T>(std::move(table));
      return *this;
    }
    // The table per record; returning nothing fails the job. One channel serves every table.
    Builder& destination_resolver(
        connector::DestinationResolver<T, connector::TableDestination> r) {
      fixed_.reset();
      resolver_ = std::move(r);
      return *this;
    }
    Builder& serializer(Serializer serializer) {
      serializer_ = std::move(serializer);
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
    // What receives a record that terminally fails [fail the job].
    Builder& failure_handler(std::shared_ptr<connector::FailureHandler> handler) {
      config_.failure_handler = std::move(handler);
      return *this;
    }
    // Conditional sink only: what an answer whose selected branch was empty means [ignore].
    Builder& empty_branch_policy(EmptyBranchPolicy policy) {
      config_.empty_branch_policy = policy;
      return *this;
    }
    // Test seam: send through this stub instead of a channel.
    Builder& stub_for_testing(std::shared_ptr<BigtableDataStub> stub) {
      config_.stub = std::move(stub);
      return *this;
    }

    absl::StatusOr<std::shared_ptr<SingleRowSink>> build() {
      GCP_RETURN_IF_ERROR(this->builder_error());
      if (!resolver_) {
        return absl::InvalidArgumentError(
            "the sink needs a destination: set table(...) or destination_resolver(...)");
      }
      if (!serializer_) return absl::InvalidArgumentError("the sink needs serializer(...)");
      GCP_RETURN_IF_ERROR(config_.options.validate());
      config_.client = this->client();
      return std::shared_ptr<SingleRowSink>(new SingleRowSink(*this));
    }

   private:
    friend class SingleRowSink;
    std::optional<connector::TableDestination> fixed_;
    connector::DestinationResolver<T, connector::TableDestination> resolver_;
    Serializer serializer_;
    SingleRowWriterConfig config_;
  };

  static Builder builder() { return Builder(); }

  absl::StatusOr<std::unique_ptr<SinkWriter<T>>> create_writer(
      WriterInitContext& context) const override {
    GCP_ASSIGN_OR_RETURN(auto core, MakeSingleRowWriterCore<Traits>(b_.config_, context));
    auto serialize = [serializer = b_.serializer_](
                         const T& element,
                         const SinkWriterContext&) -> absl::StatusOr<std::optional<Request>> {
      return connector::CallSerializer<Request>([&] { return serializer(element); });
    };
    auto writer = std::make_unique<Writer>(b_.resolver_, std::move(serialize), std::move(core));
    GCP_RETURN_IF_ERROR(writer->open());
    return std::unique_ptr<SinkWriter<T>>(std::move(writer));
  }

  LineageVertex lineage_vertex() const override {
    LineageVertex v;
    v.role = LineageVertex::Role::kSink;
    v.connector = "bigtable";
    if (b_.fixed_) v.datasets.push_back(connector::BigtableDataset(*b_.fixed_));
    return v;
  }

 private:
  using Writer =
      connector::AsyncSinkWriterFront<T, connector::TableDestination, typename Traits::Request>;
  explicit SingleRowSink(Builder b) : b_(std::move(b)) {}
  Builder b_;
};

template <typename T>
using BigtableConditionalSink = SingleRowSink<T, ConditionalTraits>;
template <typename T>
using BigtableReadModifyWriteSink = SingleRowSink<T, ReadModifyWriteTraits>;

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_REQUESTS_SINGLE_ROW_SINK_H_
