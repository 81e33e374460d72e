#ifndef GCPSTREAM_PUBSUB_SOURCE_PUBSUB_DESERIALIZATION_SCHEMA_H_
#define GCPSTREAM_PUBSUB_SOURCE_PUBSUB_DESERIALIZATION_SCHEMA_H_

#include <functional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/api/collector.h"
#include "google/pubsub/v1/pubsub.pb.h"

namespace gcpstream::pubsub {

// Turns a received message — data, attributes, ordering key, message id, publish time — into
// zero or more records written to the collector (none: the message is dropped, and still
// acknowledged). A non-OK status is a deserialization failure, handled by the source's
// deserialization_failure_policy; records collected before it stay emitted. Runs on the
// subtask thread; collect synchronously and never keep the collector. Copyable value.
template <typename T>
class PubSubDeserializationSchema {
 public:
  using Message = google::pubsub::v1::PubsubMessage;
  using Fn = std::function<absl::Status(const Message&, Collector<T>&)>;

  PubSubDeserializationSchema() = default;
  static PubSubDeserializationSchema of(Fn fn) {
    return PubSubDeserializationSchema(std::move(fn));
  }
  // Payload only: one record per message from its data.
  static PubSubDeserializationSchema payload(
      std::function<absl::StatusOr<T>(const std::string&)> fn) {
    return PubSubDeserializationSchema(
        [fn = std::move(fn)](const Message& m, Collector<T>& out) -> absl::Status {
          absl::StatusOr<T> value = fn(m.data());
          if (!value.ok()) return value.status();
          out.collect(*std::move(value));
          return absl::OkStatus();
        });
  }

  absl::Status deserialize(const Message& message, Collector<T>& out) const {
    return fn_(message, out);
  }
  bool valid() const { return static_cast<bool>(fn_); }

 private:
  explicit PubSubDeserializationSchema(Fn fn) : fn_(std::move(fn)) {}
  Fn fn_;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SOURCE_PUBSUB_DESERIALIZATION_SCHEMA_H_
