#ifndef GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SOURCE_H_
#define GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SOURCE_H_

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gcpstream/api/lineage.h"
#include "gcpstream/api/source.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/connector/lineage.h"
#include "gcpstream/pubsub/source/pubsub_deserialization_schema.h"
#include "gcpstream/pubsub/source/pubsub_source_config.h"
#include "gcpstream/pubsub/source/pubsub_source_reader.h"
#include "gcpstream/pubsub/source/pubsub_split.h"
#include "gcpstream/pubsub/source/pubsub_split_enumerator.h"

namespace gcpstream::pubsub {

// Reads Pub/Sub subscriptions through StreamingPull, at-least-once: a message is acknowledged
// only when the checkpoint taken after its emission completes; until then its lease is
// extended, and a reader that closes nacks what it holds so failover redelivers at once.
//
//   auto source = PubSubSource<std::string>::builder()
//                     .subscription(SubscriptionDestination::of("my-project", "orders"))
//                     .deserializer(PubSubDeserializationSchema<std::string>::payload(
//                         [](const std::string& data) -> absl::StatusOr<std::string> {
//                           return data;
//                         }))
//                     .build();
//   env.from_source(*source, WatermarkStrategy<std::string>::no_watermarks(), "pubsub");
//
// The publish time is each record's event timestamp. Splits, ordering, the startup check,
// memory bounds and metrics: docs/pubsub.md ("Source"). Immutable once built; thread-safe.
template <typename T>
class PubSubSource final : public Source<T, PubSubSplit, PubSubEnumeratorState>,
                           public LineageVertexProvider {
 public:
  class Builder {
   public:
    // Subscriptions that must already exist (appended to those set before).
    Builder& subscriptions(const std::vector<connector::SubscriptionDestination>& subs) {
      for (const auto& s : subs) config_.subscriptions.push_back(SubscriptionSpec{s, {}});
      return *this;
    }
    Builder& subscription(connector::SubscriptionDestination sub) {
      config_.subscriptions.push_back(SubscriptionSpec{std::move(sub), {}});
      return *this;
    }
    // A subscription the source may create, with these settings, when it does not exist.
    Builder& subscription(connector::SubscriptionDestination sub,
                          SubscriptionCreateOptions create) {
      config_.subscriptions.push_back(SubscriptionSpec{std::move(sub), std::move(create)});
      return *this;
    }
    Builder& deserializer(PubSubDeserializationSchema<T> schema) {
      deserializer_ = std::move(schema);
      return *this;
    }
    Builder& subscriber_options(PubSubSubscriberOptions options) {
      config_.subscriber_options = std::move(options);
      return *this;
    }
    Builder& ordering_mode(OrderingMode mode) {
      config_.ordering_mode = mode;
      return *this;
    }
    Builder& start_position(StartPosition position) {
      config_.start_position = position;
      return *this;
    }
    Builder& deserialization_failure_policy(DeserializationFailurePolicy policy) {
      config_.deserialization_failure_policy = policy;
      return *this;
    }
    Builder& service_account_key_file(std::string path) {
      note(config_.client_options.set_service_account_key_file(std::move(path)));
      return *this;
    }
    // host:port of an emulator (plaintext, no credentials); a malformed value fails build().
    Builder& emulator_endpoint(std::string_view host_port) {
      note(config_.client_options.set_emulator_endpoint(host_port));
      return *this;
    }
    // Test seam: the admin and subscriber stubs to use instead of the gRPC ones.
    Builder& clients(PubSubSourceClients clients) {
      config_.clients = std::move(clients);
      return *this;
    }

    // INVALID_ARGUMENT naming the option(s) of the first problem.
    absl::StatusOr<std::shared_ptr<PubSubSource>> build() const {
      GCP_RETURN_IF_ERROR(error_);
      if (!deserializer_.valid()) {
        return absl::InvalidArgumentError("PubSubSource needs deserializer(...)");
      }
      GCP_RETURN_IF_ERROR(config_.validate());
      return std::shared_ptr<PubSubSource>(
          new PubSubSource(std::make_shared<const PubSubSourceConfig>(config_), deserializer_));
    }

   private:
    void note(absl::Status s) {
      if (error_.ok() && !s.ok()) error_ = std::move(s);
    }
    PubSubSourceConfig config_;
    PubSubDeserializationSchema<T> deserializer_;
    absl::Status error_;
  };

  static Builder builder() { return Builder(); }

  Boundedness boundedness() const override { return Boundedness::kContinuousUnbounded; }

  absl::StatusOr<std::unique_ptr<SplitEnumerator<PubSubSplit, PubSubEnumeratorState>>>
  create_enumerator(SplitEnumeratorContext<PubSubSplit>& context) const override {
    return std::make_unique<PubSubSplitEnumerator>(config_, context, PubSubEnumeratorState{});
  }
  absl::StatusOr<std::unique_ptr<SplitEnumerator<PubSubSplit, PubSubEnumeratorState>>>
  restore_enumerator(SplitEnumeratorContext<PubSubSplit>& context,
                     PubSubEnumeratorState state) const override {
    return std::make_unique<PubSubSplitEnumerator>(config_, context, state);
  }
  absl::StatusOr<std::unique_ptr<SourceReader<T, PubSubSplit>>> create_reader(
      SourceReaderContext& context) const override {
    if (context.subtask_index() == 0) {  // once per job, not once per subtask
      for (const auto& w : config_->subscriber_options.warnings_at(context.checkpoint_interval())) {
        spdlog::warn("Pub/Sub source: {}", w);
      }
    }
    return std::unique_ptr<SourceReader<T, PubSubSplit>>(
        PubSubSourceReader<T>::create(config_, deserializer_, context));
  }
  const VersionedSerializer<PubSubSplit>& split_serializer() const override {
    return split_serializer_;
  }
  const VersionedSerializer<PubSubEnumeratorState>& enumerator_state_serializer() const override {
    return state_serializer_;
  }

  LineageVertex lineage_vertex() const override {
    LineageVertex v;
    v.role = LineageVertex::Role::kSource;
    v.connector = "pubsub";
    v.bounded = false;
    for (const auto& spec : config_->subscriptions) {
      v.datasets.push_back(connector::PubSubSubscriptionDataset(spec.subscription));
    }
    return v;
  }

  const PubSubSourceConfig& config() const { return *config_; }

 private:
  PubSubSource(std::shared_ptr<const PubSubSourceConfig> config,
               PubSubDeserializationSchema<T> deserializer)
      : config_(std::move(config)), deserializer_(std::move(deserializer)) {}

  std::shared_ptr<const PubSubSourceConfig> config_;
  PubSubDeserializationSchema<T> deserializer_;
  PubSubSplitSerializer split_serializer_;
  PubSubEnumeratorStateSerializer state_serializer_;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SOURCE_H_
