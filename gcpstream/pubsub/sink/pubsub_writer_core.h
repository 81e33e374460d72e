#ifndef GCPSTREAM_PUBSUB_SINK_PUBSUB_WRITER_CORE_H_
#define GCPSTREAM_PUBSUB_SINK_PUBSUB_WRITER_CORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/connector/failure_router.h"
#include "gcpstream/connector/in_flight_gate.h"
#include "gcpstream/pubsub/admin/topic_admin.h"
#include "gcpstream/pubsub/client/publisher.h"
#include "gcpstream/pubsub/sink/pubsub_publisher_options.h"

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

// Everything the Pub/Sub sink writer does after a record became a (topic, message) pair; the
// typed PubSubWriter<T> in front of it only resolves and serializes. All on the writer's thread:
// publish completions come back as mails.
//
//  - per-topic publishers, created lazily, LRU-released at max_active_publishers (draining
//    first when every publisher still has work), idle-released after a successful flush;
//  - in-flight caps by count and bytes with mailbox backpressure (a write at a cap first sends
//    what the batchers hold);
//  - failures captured from completions are returned by the next publish() / flush();
//  - INVALID_ARGUMENT answering a batch is only a candidate: the message is parked and
//    republished alone (the isolation pass) and only a solo rejection reaches the handler;
//  - NOT_FOUND under CREATE_IF_NEEDED parks the message, creates the topic and republishes it
//    under the jittered recovery budget; under CREATE_NEVER it fails naming the disposition;
//  - ordering keys paused by a failure are resumed by the repair, and the parked messages are
//    republished in publish order (sorted by a per-writer sequence);
//  - flush() sends everything, waits for every publish, repairs until nothing is parked, then
//    flushes the failure handler (dead-letter queue).
class PubSubWriterCore {
 public:
  PubSubWriterCore(PubSubWriterConfig config, WriterInitContext& context);
  ~PubSubWriterCore();

  absl::Status open();
  // Before every record: a captured failure, then any pending repair or isolation.
  absl::Status before_record();
  absl::Status publish(const connector::TopicDestination& topic,
                       google::pubsub::v1::PubsubMessage&& message);
  // A record the serializer rejected.
  absl::Status route_serialization_failure(const connector::TopicDestination& topic,
                                           absl::Status status);
  void record_skipped() { records_skipped_.inc(); }
  absl::Status flush(bool end_of_input);
  absl::Status close();

  // For tests and gauges.
  std::int64_t in_flight_messages() const { return gate_.count(); }
  std::int64_t in_flight_bytes() const { return gate_.bytes(); }
  std::int64_t parked_messages() const { return parked_count_.load(); }
  std::size_t active_publishers() const { return destinations_.size(); }

 private:
  enum class ParkReason { kNotFound, kCascade, kRejectedInBatch };
  struct Destination;
  // One accepted publish, kept until its completion (and while parked). Destinations have
  // stable addresses (node_hash_map) and are released only when nothing of theirs is in flight
  // or parked, so the pointer stays valid.
  struct Tracked {
    std::uint64_t sequence = 0;
    Destination* destination = nullptr;
    std::int64_t bytes = 0;
    bool solo = false;
    // The message is with the publisher while in flight; a failed publish hands it back here.
    std::optional<google::pubsub::v1::PubsubMessage> message;
  };
  class Completions;
  struct Parked {
    Tracked tracked;
    ParkReason reason;
    absl::Status status;
  };
  struct SoloResult {
    absl::Status status;
    std::optional<google::pubsub::v1::PubsubMessage> message;  // handed back on failure
  };
  struct Destination {
    connector::TopicDestination topic;
    std::shared_ptr<Publisher> publisher;
    SteadyTime last_used;
    int in_flight = 0;
    std::vector<Parked> parked;
    std::set<std::string> paused_keys;
    bool used_since_flush = false;
    Counter* records_send = nullptr;
    Counter* send_errors = nullptr;
  };

  absl::StatusOr<Destination*> destination(const connector::TopicDestination& topic);
  void dispatch(Destination& d, Tracked tracked, google::pubsub::v1::PubsubMessage&& message);
  void on_complete(PublishOutcome outcome);
  void park(Destination& d, Tracked tracked, ParkReason reason, absl::Status status);
  void capture(absl::Status status);
  absl::Status repair_all();
  absl::Status repair(const connector::TopicDestination& topic);
  absl::Status ensure_topic(const connector::TopicDestination& topic);
  absl::StatusOr<SoloResult> publish_solo_and_wait(Destination& d, Tracked tracked,
                                                   google::pubsub::v1::PubsubMessage&& message);
  absl::Status drain(std::string_view wait);
  absl::Status release(const std::vector<connector::TopicDestination>& topics);
  absl::Status release_idle();
  bool clean(const Destination& d) const {
    return d.in_flight == 0 && d.parked.empty() && d.paused_keys.empty();
  }

  // Completions hold this weakly: a mail arriving after close() does nothing. Declared first:
  // members below capture it while being constructed.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  PubSubWriterConfig config_;
  WriterInitContext& context_;
  MetricGroup& metrics_;
  connector::InFlightGate gate_;
  connector::FailureRouter router_;
  Counter& records_send_;
  Counter& bytes_send_;
  Counter& records_skipped_;
  Counter& topics_created_;
  absl::node_hash_map<connector::TopicDestination, Destination> destinations_;
  // Publishes in flight, by token (= sequence).
  absl::flat_hash_map<std::uint64_t, Tracked> in_flight_;
  // The destination of the previous record (most sinks write one topic): skips the map lookup.
  const connector::TopicDestination* last_topic_ = nullptr;
  Destination* last_destination_ = nullptr;
  // Outcomes arrive here from client threads; one mail drains whatever has accumulated.
  std::shared_ptr<Completions> completions_;
  std::map<std::uint64_t, SoloResult> solo_results_;
  absl::Status captured_;
  std::uint64_t next_sequence_ = 0;
  std::atomic<std::int64_t> parked_count_{0};
  bool repairing_ = false;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SINK_PUBSUB_WRITER_CORE_H_
