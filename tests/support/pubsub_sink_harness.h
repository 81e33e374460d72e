#ifndef GCPSTREAM_TESTS_SUPPORT_PUBSUB_SINK_HARNESS_H_
#define GCPSTREAM_TESTS_SUPPORT_PUBSUB_SINK_HARNESS_H_

#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gcpstream/pubsub/sink/pubsub_sink.h"
#include "tests/support/fake_contexts.h"
#include "tests/support/fake_pubsub.h"
#include "tests/support/sink_harness.h"

namespace gcpstream::testing {

// The Pub/Sub sink over FakePublishers, for the sink conformance suite. A record is
// (destination, key), published to topic "topic-<destination>" (Pub/Sub ids have at least 3
// characters); the message's data is the key.
struct PubSubSinkRecord {
  std::string topic;
  std::string key;
};

class PubSubSinkHarness final : public SinkHarnessBase<PubSubSinkRecord> {
 public:
  using Record = PubSubSinkRecord;

  std::string name() const override { return "pubsub"; }
  std::string connector() const override { return "Pub/Sub"; }
  std::string in_flight_gauge() const override { return "inFlightMessages"; }

  absl::Status open(const SinkHarnessOptions& o) override {
    pubsub::PubSubPublisherOptions options;
    options.max_in_flight_messages = o.max_in_flight_count;
    options.max_in_flight_bytes = o.max_in_flight_bytes;
    options.max_consecutive_rejections = o.max_consecutive_rejections;
    // The Pub/Sub writer warns every tenth of its progress timeout.
    options.publish_progress_timeout = std::min<std::chrono::milliseconds>(
        o.stall_warning_interval * 10, std::chrono::seconds(20));
    options.recovery.initial_backoff = std::chrono::milliseconds(1);
    options.recovery.max_backoff = std::chrono::milliseconds(5);
    pubsub::PubSubSinkClients clients;
    clients.publishers = factory_;
    clients.admin_factory = [admin =
                                 admin_]() -> absl::StatusOr<std::shared_ptr<pubsub::TopicAdmin>> {
      return std::shared_ptr<pubsub::TopicAdmin>(admin);
    };
    auto b = pubsub::PubSubSink<Record>::builder();
    b.destination_resolver([](const Record& r, const SinkWriterContext&) {
       return std::optional<connector::TopicDestination>(
           connector::TopicDestination::of("p", TopicOf(r.topic)));
     })
        .serializer(pubsub::PubSubSerializationSchema<Record>::of(
            [](const Record& r,
               const SinkWriterContext&) -> std::optional<google::pubsub::v1::PubsubMessage> {
              if (r.key == "<skip>") return std::nullopt;
              if (r.key == "<throw>") throw std::runtime_error("cannot encode");
              google::pubsub::v1::PubsubMessage m;
              m.set_data(r.key);
              return m;
            }))
        .publisher_options(options)
        .create_disposition(o.create_if_needed ? pubsub::CreateDisposition::kCreateIfNeeded
                                               : pubsub::CreateDisposition::kCreateNever)
        .clients(clients);
    if (o.handler) b.failed_message_handler(o.handler);
    auto sink = b.build();
    if (!sink.ok()) return sink.status();
    return open_writer(std::shared_ptr<Sink<Record>>(*sink));
  }

  static std::string TopicOf(const std::string& destination) { return "topic-" + destination; }

  std::size_t submitted(const std::string& d) override {
    auto p = factory_->latest(TopicOf(d));
    return p ? p->size() : 0;
  }
  std::string key(const std::string& d, std::size_t i) override {
    return factory_->latest(TopicOf(d))->call(i).message.data();
  }
  bool solo(const std::string& d, std::size_t i) override {
    return factory_->latest(TopicOf(d))->call(i).solo;
  }
  void complete(const std::string& d, std::size_t i, absl::Status status) override {
    auto p = factory_->latest(TopicOf(d));
    if (!p) return;
    if (status.ok()) {
      p->complete(i, std::string("id"));
    } else {
      p->complete(i, std::move(status));
    }
  }
  void respond(SinkResponder responder) override {
    auto attempts = std::make_shared<std::map<std::string, int>>();
    factory_->configure = [responder, attempts](const std::string&, FakePublisher& p) {
      p.on_publish = [responder, attempts, &p](std::size_t i, const FakePublisher::Call& c) {
        const std::string key = c.message.data();
        auto answer = responder(key, c.solo, (*attempts)[key]++);
        if (!answer) return;
        if (answer->ok()) {
          p.complete(i, std::string("id"));
        } else {
          p.complete(i, *answer);
        }
      };
    };
  }
  int client_flushes(const std::string& d) override {
    auto p = factory_->latest(TopicOf(d));
    return p ? p->flushes() : 0;
  }
  int client_shutdowns(const std::string& d) override {
    auto p = factory_->latest(TopicOf(d));
    return p ? p->shutdowns() : 0;
  }
  std::vector<std::string> created() override {
    std::lock_guard lock(admin_->mu_);
    std::vector<std::string> out;
    for (const auto& t : admin_->created) {
      out.push_back(t.name().substr(t.name().rfind('/') + 1 + TopicOf("").size()));
    }
    return out;
  }
  std::string fail_everything_pending(absl::Status status) override {
    std::string seen;
    for (auto& [topic, publishers] : factory_->all()) {
      for (auto& p : publishers) {
        seen += fmt::format(" {}: {} publishes, {} pending;", topic, p->size(), p->pending());
        for (std::size_t i = 0; i < p->size(); ++i) p->complete(i, status);
      }
    }
    return seen;
  }

 protected:
  Record make(const std::string& destination, const std::string& key) const override {
    return {destination, key};
  }

 private:
  std::shared_ptr<FakePublisherFactory> factory_ = std::make_shared<FakePublisherFactory>();
  std::shared_ptr<FakeTopicAdmin> admin_ = std::make_shared<FakeTopicAdmin>();
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_PUBSUB_SINK_HARNESS_H_
