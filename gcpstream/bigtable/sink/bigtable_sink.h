#ifndef GCPSTREAM_BIGTABLE_SINK_BIGTABLE_SINK_H_
#define GCPSTREAM_BIGTABLE_SINK_BIGTABLE_SINK_H_

#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <string>

#include "gcpstream/api/lineage.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigtable/admin/resource_names.h"
#include "gcpstream/bigtable/sink/bigtable_serialization_schema.h"
#include "gcpstream/bigtable/sink/bigtable_sink_adapter.h"
#include "gcpstream/connector/async_sink_writer_front.h"
#include "gcpstream/connector/client_options.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/failure_handler.h"
#include "gcpstream/connector/lineage.h"
#include "gcpstream/connector/serialization.h"

namespace gcpstream::bigtable {

inline constexpr char kBigtableTarget[] = "bigtable.googleapis.com:443";
inline constexpr char kBigtableAdminTarget[] = "bigtableadmin.googleapis.com:443";

// The gRPC clients: one channel per (project, instance), one BulkMutationBatcher per table.
std::shared_ptr<InstanceClientFactory> MakeGrpcInstanceClientFactory(
    connector::ClientOptions client, std::string app_profile_id, BatchingThresholds thresholds,
    MutateRowsRetrySettings retry = {});

// Writes every record to Bigtable as one RowMutationEntry (MutateRows, batched), at-least-once:
// flush() at each checkpoint sends what the batchers hold and waits for every entry, so a
// completed checkpoint means Bigtable applied every record before the barrier (except those
// skipped by the serializer or received by a dropping failure handler).
//
//   auto sink = BigtableSink<Flight>::builder()
//                   .table(TableDestination::of("p", "i", "flights"))
//                   .serializer(BigtableSerializationSchema<Flight>::of(to_entry))
//                   .build();
//
// See docs/bigtable.md for every option, default and failure class.
template <typename T>
class BigtableSink final : public Sink<T>, public LineageVertexProvider {
 public:
  class Builder {
   public:
    Builder& table(connector::TableDestination table) {
      fixed_ = table;
      resolver_ = connector::FixedDestination<T>(std::move(table));
      return *this;
    }
    Builder& destination_resolver(
        connector::DestinationResolver<T, connector::TableDestination> resolver) {
      fixed_.reset();
      resolver_ = std::move(resolver);
      return *this;
    }
    Builder& serializer(BigtableSerializationSchema<T> schema) {
      serializer_ = std::move(schema);
      return *this;
    }
    // The application profile every request names (a Data Boost profile is read-only: do not
    // use one here).
    Builder& app_profile_id(std::string id) {
      app_profile_ = std::move(id);
      return *this;
    }
    // Validated here: a batch threshold above its ceiling is reported by build() naming it.
    Builder& writer_options(BigtableWriterOptions options) {
      note(options.thresholds().validate());
      options_ = std::move(options);
      return *this;
    }
    // CREATE_NEVER (default) or CREATE_IF_NEEDED, which requires table_create_options.
    Builder& create_disposition(CreateDisposition disposition) {
      disposition_ = disposition;
      return *this;
    }
    Builder& table_create_options(TableCreateOptions options) {
      create_options_ = std::move(options);
      return *this;
    }
    Builder& failed_mutation_handler(std::shared_ptr<connector::FailureHandler> handler) {
      handler_ = std::move(handler);
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
    // Test seam.
    Builder& clients(std::shared_ptr<InstanceClientFactory> clients) {
      clients_ = std::move(clients);
      return *this;
    }

    absl::StatusOr<std::shared_ptr<BigtableSink>> build() const {
      GCP_RETURN_IF_ERROR(error_);
      if (!resolver_) {
        return absl::InvalidArgumentError(
            "BigtableSink needs a destination: set table(...) or destination_resolver(...)");
      }
      if (!serializer_.valid())
        return absl::InvalidArgumentError("BigtableSink needs serializer(...)");
      GCP_RETURN_IF_ERROR(client_.validate());
      GCP_RETURN_IF_ERROR(options_.validate());
      if (fixed_) GCP_RETURN_IF_ERROR(ValidateTableId(fixed_->table));
      if (disposition_ == CreateDisposition::kCreateIfNeeded && !create_options_) {
        return absl::InvalidArgumentError(
            "create_disposition CREATE_IF_NEEDED requires table_create_options declaring the "
            "column families to create");
      }
      if (disposition_ == CreateDisposition::kCreateNever && create_options_) {
        return absl::InvalidArgumentError(
            "table_create_options cannot be combined with create_disposition CREATE_NEVER");
      }
      if (create_options_) GCP_RETURN_IF_ERROR(create_options_->validate());
      for (const auto& w : options_.warnings()) spdlog::warn("BigtableSink: {}", w);
      return std::shared_ptr<BigtableSink>(new BigtableSink(*this));
    }

   private:
    friend class BigtableSink;
    void note(absl::Status s) {
      if (error_.ok() && !s.ok()) error_ = std::move(s);
    }
    std::optional<connector::TableDestination> fixed_;
    connector::DestinationResolver<T, connector::TableDestination> resolver_;
    BigtableSerializationSchema<T> serializer_;
    std::string app_profile_;
    BigtableWriterOptions options_;
    CreateDisposition disposition_ = CreateDisposition::kCreateNever;
    std::optional<TableCreateOptions> create_options_;
    std::shared_ptr<connector::FailureHandler> handler_;
    connector::ClientOptions client_;
    std::shared_ptr<InstanceClientFactory> clients_;
    absl::Status error_;
  };

  static Builder builder() { return Builder(); }

  absl::StatusOr<std::unique_ptr<SinkWriter<T>>> create_writer(
      WriterInitContext& context) const override {
    BigtableWriterConfig config;
    config.options = b_.options_;
    config.create_disposition = b_.disposition_;
    config.table_create_options = b_.create_options_;
    config.failure_handler = b_.handler_ ? b_.handler_ : connector::FailureHandler::fail_job();
    config.clients = b_.clients_ ? b_.clients_
                                 : MakeGrpcInstanceClientFactory(b_.client_, b_.app_profile_,
                                                                 b_.options_.thresholds());
    GCP_RETURN_IF_ERROR(b_.serializer_.open());
    auto serialize = [serializer = b_.serializer_](
                         const T& element,
                         const SinkWriterContext& context) -> absl::StatusOr<std::optional<Entry>> {
      GCP_ASSIGN_OR_RETURN(auto entry, connector::CallSerializer<RowMutationEntry>(
                                           [&] { return serializer.serialize(element, context); }));
      if (!entry) return std::optional<Entry>();
      return std::optional<Entry>(std::move(*entry).release());
    };
    auto writer = std::make_unique<Writer>(b_.resolver_, std::move(serialize),
                                           MakeBigtableWriterCore(std::move(config), context));
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
  using Writer = connector::AsyncSinkWriterFront<T, connector::TableDestination, Entry>;

  explicit BigtableSink(Builder b) : b_(std::move(b)) {}
  Builder b_;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_SINK_BIGTABLE_SINK_H_
