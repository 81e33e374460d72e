#ifndef GCPSTREAM_PUBSUB_SINK_FAILED_MESSAGE_H_
#define GCPSTREAM_PUBSUB_SINK_FAILED_MESSAGE_H_

#include <optional>
#include <string>

#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/failed_element.h"
#include "google/pubsub/v1/pubsub.pb.h"

namespace gcpstream::pubsub {

// A message the Pub/Sub sink could not publish: the message the serializer produced (none when
// serialization itself failed). Its payload is the whole serialized PubsubMessage, so a
// dead-letter consumer recovers data, attributes and ordering key with ParseFromString.
class FailedMessage final : public connector::FailedElement {
 public:
  FailedMessage(connector::TopicDestination topic,
                std::optional<google::pubsub::v1::PubsubMessage> message, absl::Status status,
                bool service_rejection)
      : topic_(std::move(topic)),
        message_(std::move(message)),
        status_(std::move(status)),
        service_rejection_(service_rejection) {}

  std::string_view connector() const override { return "pubsub"; }
  std::string describe_destination() const override { return topic_.resource_name(); }
  std::string payload_bytes() const override {
    return message_ ? message_->SerializeAsString() : std::string();
  }
  absl::Status status() const override { return status_; }
  bool is_service_rejection() const override { return service_rejection_; }

  const connector::TopicDestination& topic() const { return topic_; }
  const std::optional<google::pubsub::v1::PubsubMessage>& pubsub_message() const {
    return message_;
  }

 private:
  connector::TopicDestination topic_;
  std::optional<google::pubsub::v1::PubsubMessage> message_;
  absl::Status status_;
  bool service_rejection_;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SINK_FAILED_MESSAGE_H_
