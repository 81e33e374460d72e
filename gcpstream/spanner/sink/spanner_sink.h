#ifndef GCPSTREAM_SPANNER_SINK_SPANNER_SINK_H_
#define GCPSTREAM_SPANNER_SINK_SPANNER_SINK_H_

#include <spdlog/spdlog.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gcpstream/api/lineage.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/connector/async_sink_writer_front.h"
#include "gcpstream/connector/client_options.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/failure_handler.h"
#include "gcpstream/connector/lineage.h"
#include "gcpstream/connector/serialization.h"
#include "gcpstream/spanner/admin/database_admin.h"
#include "gcpstream/spanner/client/make_stub.h"
#include "gcpstream/spanner/client/mutation.h"
#include "gcpstream/spanner/sink/spanner_sink_adapter.h"
#include "gcpstream/spanner/sink/spanner_writer_options.h"
#include "gcpstream/util/scheduler.h"

namespace gcpstream::spanner {

// Writes each record as one Spanner mutation with BatchWrite, one mutation per mutation group,
// at least once. The destination is a database; the table is the mutation's own, so one sink
// writes to any table of that database its serializer names.
//
//   auto sink = SpannerSink<Flight>::builder()
//       .database(connector::DatabaseDestination::of("p", "i", "flights"))
//       .serializer([](const Flight& f, const SinkWriterContext&) ->
//       absl::StatusOr<std::optional<Mutation>> {
//         return Mutation::InsertOrUpdate("Flights").Set("Id", Value::String(f.id)).Build();
//       })
//       .build();
//
// Serializer contract: a Mutation, or std::nullopt to skip the record (counted by
// recordsSkipped, never routed); an error or a throw is a serialization failure routed to the
// failed-mutation handler. The writer is asynchronous: requests are sent as they fill (see
// SpannerWriterOptions for the limits and in-flight caps) and every checkpoint waits until each
// mutation up to it was applied, skipped or handed to the handler. Spanner's BatchWrite is not
// replay-protected, so a mutation may be applied more than once: insert_or_update and replace
// are idempotent, insert is not (a replay answers ALREADY_EXISTS, which is routed). See
// docs/spanner.md, "The sink".
template <typename T>
class SpannerSink final : public Sink<T>, public LineageVertexProvider {
 public:
  using Serializer =
      std::function<absl::StatusOr<std::optional<Mutation>>(const T&, const SinkWriterContext&)>;

  class Builder {
   public:
    Builder& database(connector::DatabaseDestination database) {
      database_ = std::move(database);
      return *this;
    }
    Builder& serializer(Serializer serializer) {
      serializer_ = std::move(serializer);
      return *this;
    }
    Builder& writer_options(SpannerWriterOptions options) {
      options_ = std::move(options);
      return *this;
    }
    // [FailureHandler::fail_job()] What happens to a mutation Spanner refused for good.
    Builder& failed_mutation_handler(std::shared_ptr<connector::FailureHandler> handler) {
      handler_ = std::move(handler);
      return *this;
    }
    // [kFailJob] See ConstraintViolationPolicy.
    Builder& constraint_violation_policy(ConstraintViolationPolicy policy) {
      policy_ = policy;
      return *this;
    }
    Builder& service_account_key_file(std::string path) {
      note(client_.set_service_account_key_file(std::move(path)));
      return *this;
    }
    Builder& emulator_endpoint(std::string_view host_port) {
      note(client_.set_emulator_endpoint(host_port));
      return *this;
    }
    // Tests: the stub to write through instead of a gRPC client, the jitter source (values in
    // [0, 1]; 0.5 is no jitter) and the clock with its timers (default: real time).
    Builder& stub(std::shared_ptr<SpannerStub> stub) {
      stub_ = std::move(stub);
      return *this;
    }
    Builder& uniform01(std::function<double()> uniform01) {
      uniform01_ = std::move(uniform01);
      return *this;
    }
    Builder& scheduler(std::shared_ptr<util::Scheduler> scheduler) {
      scheduler_ = std::move(scheduler);
      return *this;
    }

    // INVALID_ARGUMENT naming what is missing or out of range.
    absl::StatusOr<std::shared_ptr<SpannerSink>> build() const {
      GCP_RETURN_IF_ERROR(error_);
      if (!database_) {
        return absl::InvalidArgumentError("SpannerSink needs database(...)");
      }
      if (!serializer_) return absl::InvalidArgumentError("SpannerSink needs serializer(...)");
      GCP_RETURN_IF_ERROR(ValidateDatabaseDestination(*database_));
      GCP_RETURN_IF_ERROR(client_.validate());
      GCP_RETURN_IF_ERROR(options_.validate());
      // Where the job is assembled, once: configurations that work but not as they seem.
      for (const std::string& w : options_.warnings()) spdlog::warn("{}", w);
      return std::shared_ptr<SpannerSink>(new SpannerSink(*this));
    }

   private:
    friend class SpannerSink;
    void note(absl::Status s) {
      if (error_.ok() && !s.ok()) error_ = std::move(s);
    }
    std::optional<connector::DatabaseDestination> database_;
    Serializer serializer_;
    SpannerWriterOptions options_;
    std::shared_ptr<connector::FailureHandler> handler_;
    ConstraintViolationPolicy policy_ = ConstraintViolationPolicy::kFailJob;
    connector::ClientOptions client_;
    std::shared_ptr<SpannerStub> stub_;
    std::function<double()> uniform01_;
    std::shared_ptr<util::Scheduler> scheduler_;
    absl::Status error_;
  };

  static Builder builder() { return Builder(); }

  absl::StatusOr<std::unique_ptr<SinkWriter<T>>> create_writer(
      WriterInitContext& context) const override {
    SpannerWriterConfig config;
    config.options = b_.options_;
    config.constraint_violation_policy = b_.policy_;
    config.failure_handler = b_.handler_ ? b_.handler_ : connector::FailureHandler::fail_job();
    config.uniform01 = b_.uniform01_;
    config.scheduler = b_.scheduler_;
    if (b_.stub_) {
      config.stub = b_.stub_;
    } else {
      GCP_ASSIGN_OR_RETURN(config.stub, MakeSpannerStub(b_.client_));
    }
    auto serialize = [serializer = b_.serializer_](const T& element,
                                                   const SinkWriterContext& context)
        -> absl::StatusOr<std::optional<google::spanner::v1::Mutation>> {
      absl::StatusOr<std::optional<Mutation>> m =
          connector::CallSerializer<Mutation>([&] { return serializer(element, context); });
      if (!m.ok()) return m.status();
      if (!m->has_value()) return std::nullopt;
      return std::move(**m).release_proto();
    };
    auto writer = std::make_unique<Writer>(connector::FixedDestination<T>(*b_.database_),
                                           std::move(serialize),
                                           MakeSpannerWriterCore(std::move(config), context));
    GCP_RETURN_IF_ERROR(writer->open());
    return std::unique_ptr<SinkWriter<T>>(std::move(writer));
  }

  LineageVertex lineage_vertex() const override {
    LineageVertex v;
    v.role = LineageVertex::Role::kSink;
    v.connector = "spanner";
    v.datasets.push_back(connector::SpannerDatabaseDataset(*b_.database_));
    return v;
  }

  const SpannerWriterOptions& options() const { return b_.options_; }

 private:
  using Writer = connector::AsyncSinkWriterFront<T, connector::DatabaseDestination,
                                                 google::spanner::v1::Mutation>;
  explicit SpannerSink(Builder b) : b_(std::move(b)) {}
  Builder b_;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_SINK_SPANNER_SINK_H_
