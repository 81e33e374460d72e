#ifndef GCPSTREAM_PUBSUB_SINK_PUBSUB_SINK_ADAPTER_H_
#define GCPSTREAM_PUBSUB_SINK_PUBSUB_SINK_ADAPTER_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/connector/async_sink_writer.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/failure_handler.h"
#include "gcpstream/pubsub/admin/topic_admin.h"
#include "gcpstream/pubsub/client/publisher.h"
#include "gcpstream/pubsub/sink/pubsub_publisher_options.h"
#include "google/pubsub/v1/pubsub.pb.h"

namespace gcpstream::pubsub {

enum class CreateDisposition { kCreateIfNeeded, kCreateNever };

struct PubSubWriterConfig {
  PubSubPublisherOptions options;
  CreateDisposition create_disposition = CreateDisposition::kCreateIfNeeded;
  TopicCreateOptions topic_create_options;
  std::shared_ptr<connector::FailureHandler> failure_handler;
  std::shared_ptr<PublisherFactory> publishers;
  // Opens a short-lived admin client for a topic creation (only when a publish hit NOT_FOUND).
  std::function<absl::StatusOr<std::shared_ptr<TopicAdmin>>()> admin_factory;
};

// The Pub/Sub sink's writer: the shared asynchronous core (connector/async_sink_writer.h) over
// one publisher per topic. Its adapter adds what is Pub/Sub's own:
//  - a message with an ordering key while enable_message_ordering is off fails the job;
//  - NOT_FOUND under CREATE_IF_NEEDED creates the topic (topic_create_options) and republishes;
//    under CREATE_NEVER it fails naming the disposition;
//  - an ordering key paused by a failure is resumed by the repair, and its parked messages
//    are republished in publish order; a queued message failed only because its key was
//    paused is a cascade, never a root cause;
//  - metrics inFlightMessages, parkedMessages, topicsCreated, publisherShutdownsAbandoned.
using PubSubWriterCore =
    connector::AsyncSinkWriter<connector::TopicDestination, google::pubsub::v1::PubsubMessage>;

std::unique_ptr<PubSubWriterCore> MakePubSubWriterCore(PubSubWriterConfig config,
                                                       WriterInitContext& context);

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SINK_PUBSUB_SINK_ADAPTER_H_
