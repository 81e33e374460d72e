#ifndef GCPSTREAM_PUBSUB_SINK_PUBSUB_SERIALIZATION_SCHEMA_H_
#define GCPSTREAM_PUBSUB_SINK_PUBSUB_SERIALIZATION_SCHEMA_H_

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "gcpstream/api/sink.h"
#include "google/pubsub/v1/pubsub.pb.h"

namespace gcpstream::pubsub {

// Turns a record into the PubsubMessage to publish, or into nothing to skip it (a skip is not a
// failure: it is counted by recordsSkipped and never reaches the failure handler). Runs on the
// writer's thread; throwing is a serialization failure, routed to the failure handler.
// Copyable value; compose with with_attributes() and with_ordering_key().
template <typename T>
class PubSubSerializationSchema {
 public:
  using Message = google::pubsub::v1::PubsubMessage;
  using Fn = std::function<std::optional<Message>(const T&, const SinkWriterContext&)>;

  // A schema building the whole message.
  static PubSubSerializationSchema of(Fn fn) { return PubSubSerializationSchema(std::move(fn)); }
  // Payload only: `fn` returns the message data. It cannot skip.
  static PubSubSerializationSchema payload(std::function<std::string(const T&)> fn) {
    return PubSubSerializationSchema([fn = std::move(fn)](const T& v, const SinkWriterContext&) {
      std::optional<Message> m(std::in_place);  // built in place: no extra message move
      m->set_data(fn(v));
      return m;
    });
  }

  // Adds extracted attributes (an empty map adds nothing). Not called for skipped records.
  PubSubSerializationSchema with_attributes(
      std::function<std::map<std::string, std::string>(const T&)> extract) const {
    Fn inner = fn_;
    return PubSubSerializationSchema(
        [inner, extract = std::move(extract)](const T& v, const SinkWriterContext& ctx) {
          std::optional<Message> m = inner(v, ctx);
          if (!m) return m;
          for (auto& [k, value] : extract(v)) (*m->mutable_attributes())[k] = value;
          return m;
        });
  }
  // Sets an extracted ordering key (an empty key adds nothing). Not called for skipped records.
  PubSubSerializationSchema with_ordering_key(std::function<std::string(const T&)> extract) const {
    Fn inner = fn_;
    return PubSubSerializationSchema(
        [inner, extract = std::move(extract)](const T& v, const SinkWriterContext& ctx) {
          std::optional<Message> m = inner(v, ctx);
          if (!m) return m;
          std::string key = extract(v);
          if (!key.empty()) m->set_ordering_key(std::move(key));
          return m;
        });
  }

  std::optional<Message> serialize(const T& value, const SinkWriterContext& ctx) const {
    return fn_(value, ctx);
  }
  bool valid() const { return static_cast<bool>(fn_); }

  PubSubSerializationSchema() = default;

 private:
  explicit PubSubSerializationSchema(Fn fn) : fn_(std::move(fn)) {}
  Fn fn_;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SINK_PUBSUB_SERIALIZATION_SCHEMA_H_
