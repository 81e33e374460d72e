#ifndef GCPSTREAM_PUBSUB_SINK_PUBSUB_SINK_H_
#define GCPSTREAM_PUBSUB_SINK_PUBSUB_SINK_H_

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>

#include "gcpstream/api/lineage.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/connector/async_sink_writer_front.h"
#include "gcpstream/connector/client_options.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/failure_handler.h"
#include "gcpstream/connector/lineage.h"
#include "gcpstream/connector/serialization.h"
#include "gcpstream/pubsub/admin/resource_names.h"
#include "gcpstream/pubsub/client/pubsub_target.h"
#include "gcpstream/pubsub/sink/pubsub_serialization_schema.h"
#include "gcpstream/pubsub/sink/pubsub_sink_adapter.h"

namespace gcpstream::pubsub {

// The clients a Pub/Sub sink writer uses, created when the writer starts (credentials are read
// then). Tests replace them with fakes.
struct PubSubSinkClients {
  std::shared_ptr<PublisherFactory> publishers;
  std::function<absl::StatusOr<std::shared_ptr<TopicAdmin>>()> admin_factory;
};
absl::StatusOr<PubSubSinkClients> MakePubSubSinkClients(const connector::ClientOptions& client,
                                                        const PublisherSettings& settings);

// Publishes every record to Pub/Sub, at-least-once: flush() at each checkpoint waits for every
// publish, so a completed checkpoint means Pub/Sub stored every record before the barrier
// (except those the serializer skipped, or that a dropping failure handler received).
//
//   auto sink = PubSubSink<Event>::builder()
//                   .topic(TopicDestination::of("my-project", "events"))
//                   .serializer(PubSubSerializationSchema<Event>::payload(encode)
//                                   .with_ordering_key(device_of))
//                   .publisher_options(options)
//                   .build();
//
// See docs/pubsub.md for every option and the failure classes.
template <typename T>
class PubSubSink final : public Sink<T>, public LineageVertexProvider {
 public:
  class Builder {
   public:
    // Every record to one topic. Replaces a destination resolver set before (last wins).
    Builder& topic(connector::TopicDestination topic) {
      fixed_ = topic;
      resolver_ = connector::FixedDestination<T>(std::move(topic));
      return *this;
    }
    // The topic per record; returning nothing fails the job. Replaces topic() (last wins).
    Builder& destination_resolver(
        connector::DestinationResolver<T, connector::TopicDestination> r) {
      fixed_.reset();
      resolver_ = std::move(r);
      return *this;
    }
    Builder& serializer(PubSubSerializationSchema<T> schema) {
      serializer_ = std::move(schema);
      return *this;
    }
    Builder& publisher_options(PubSubPublisherOptions options) {
      options_ = std::move(options);
      return *this;
    }
    // CREATE_IF_NEEDED (default): a missing topic is created on the first NOT_FOUND.
    Builder& create_disposition(CreateDisposition disposition) {
      disposition_ = disposition;
      return *this;
    }
    // Settings of topics the sink creates; rejected beside CREATE_NEVER.
    Builder& topic_create_options(TopicCreateOptions options) {
      create_options_ = std::move(options);
      return *this;
    }
    Builder& failed_message_handler(std::shared_ptr<connector::FailureHandler> handler) {
      handler_ = std::move(handler);
      return *this;
    }
    Builder& service_account_key_file(std::string path) {
      note(client_.set_service_account_key_file(std::move(path)));
      return *this;
    }
    // host:port of an emulator; malformed values are reported by build().
    Builder& emulator_endpoint(std::string_view host_port) {
      note(client_.set_emulator_endpoint(host_port));
      return *this;
    }
    // Test seam: clients to use instead of the gRPC ones.
    Builder& clients(PubSubSinkClients clients) {
      clients_ = std::move(clients);
      return *this;
    }

    // INVALID_ARGUMENT naming the option(s) of the first problem.
    absl::StatusOr<std::shared_ptr<PubSubSink>> build() const {
      GCP_RETURN_IF_ERROR(error_);
      if (!resolver_) {
        return absl::InvalidArgumentError(
            "PubSubSink needs a destination: set topic(...) or destination_resolver(...)");
      }
      if (!serializer_.valid())
        return absl::InvalidArgumentError("PubSubSink needs serializer(...)");
      GCP_RETURN_IF_ERROR(client_.validate());
      GCP_RETURN_IF_ERROR(options_.validate());
      if (fixed_) GCP_RETURN_IF_ERROR(ValidateResourceId("topic", fixed_->topic));
      if (create_options_ && disposition_ == CreateDisposition::kCreateNever) {
        return absl::InvalidArgumentError(
            "topic_create_options cannot be combined with create_disposition CREATE_NEVER: "
            "they would configure topics the sink never creates");
      }
      if (create_options_) GCP_RETURN_IF_ERROR(create_options_->validate());
      return std::shared_ptr<PubSubSink>(new PubSubSink(*this));
    }

   private:
    friend class PubSubSink;
    void note(absl::Status s) {
      if (error_.ok() && !s.ok()) error_ = std::move(s);
    }
    std::optional<connector::TopicDestination> fixed_;
    connector::DestinationResolver<T, connector::TopicDestination> resolver_;
    PubSubSerializationSchema<T> serializer_;
    PubSubPublisherOptions options_;
    CreateDisposition disposition_ = CreateDisposition::kCreateIfNeeded;
    std::optional<TopicCreateOptions> create_options_;
    std::shared_ptr<connector::FailureHandler> handler_;
    connector::ClientOptions client_;
    std::optional<PubSubSinkClients> clients_;
    absl::Status error_;
  };

  static Builder builder() { return Builder(); }

  absl::StatusOr<std::unique_ptr<SinkWriter<T>>> create_writer(
      WriterInitContext& context) const override {
    PubSubWriterConfig config;
    config.options = b_.options_;
    config.create_disposition = b_.disposition_;
    config.topic_create_options = b_.create_options_.value_or(TopicCreateOptions{});
    config.failure_handler = b_.handler_ ? b_.handler_ : connector::FailureHandler::fail_job();
    PubSubSinkClients clients;
    if (b_.clients_) {
      clients = *b_.clients_;
    } else {
      GCP_ASSIGN_OR_RETURN(clients,
                           MakePubSubSinkClients(b_.client_, b_.options_.publisher_settings()));
    }
    config.publishers = std::move(clients.publishers);
    config.admin_factory = std::move(clients.admin_factory);
    auto serialize = [serializer = b_.serializer_](const T& element,
                                                   const SinkWriterContext& context) {
      return connector::CallSerializer<google::pubsub::v1::PubsubMessage>(
          [&] { return serializer.serialize(element, context); });
    };
    auto writer = std::make_unique<Writer>(b_.resolver_, std::move(serialize),
                                           MakePubSubWriterCore(std::move(config), context));
    GCP_RETURN_IF_ERROR(writer->open());
    return std::unique_ptr<SinkWriter<T>>(std::move(writer));
  }

  LineageVertex lineage_vertex() const override {
    LineageVertex v;
    v.role = LineageVertex::Role::kSink;
    v.connector = "pubsub";
    if (b_.fixed_) v.datasets.push_back(connector::PubSubTopicDataset(*b_.fixed_));
    return v;
  }

  const PubSubPublisherOptions& options() const { return b_.options_; }

 private:
  using Writer = connector::AsyncSinkWriterFront<T, connector::TopicDestination,
                                                 google::pubsub::v1::PubsubMessage>;

  explicit PubSubSink(Builder b) : b_(std::move(b)) {}
  Builder b_;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SINK_PUBSUB_SINK_H_
